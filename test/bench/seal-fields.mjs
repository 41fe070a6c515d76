// Bench only (round 39 `sealer`, round 40 `seal-one`): `node test/bench/seal-fields.mjs <mode> <n>`
// under `valgrind --tool=callgrind`, n = 0 and 2000; the difference ÷ 2000 is one iteration's
// instructions. Modes:
//   two / one          a pick-up's two opens (program, request) / round 39's one open of [code, request]
//   pick               the pick-up as format 2 reads it (sealed-fields.ts `openPick`: bound, then parsed)
//   seal2 / seal1      the submit's two seals / one of [code, request] (round 39's probe)
//   sealpick           the submit's seal as format 2 writes it (`sealPick`, bound)
//   end2               the end's two seals as format 1 writes them (result, text), each making its cipher
//   ended              the end's one seal as format 2 writes it (`sealEnded`: a Completed text left out)
//   readend2 / readended  the end's fields read back (format 1: two opens; 2: `openEnded`)
import { createSealer } from '../../services/core/src/sealer.ts';
import { openEnded, openPick, sealEnded, sealPick } from '../../services/runs/src/sealed-fields.ts';

const [mode, nText] = process.argv.slice(2);
const n = Number(nText);
const s = createSealer({ keys: { k1: Buffer.alloc(32, 3) }, activeKeyId: 'k1' });
const id = 'run_0123456789abcdefghijkl';
const code = `export default async () => { return ${'1 + '.repeat(40)}1; }`;
const requestData = {
  style: 'run_code',
  limits: { memoryMb: 64, timeoutMs: 30000 },
  connections: [],
  bindings: [],
  submittedBy: 'key_0123456789abcdef',
};
const request = JSON.stringify(requestData);
const result = { _tag: 'Completed', value: 41, logs: [{ level: 'log', text: 'hello' }] };
const text = 'hello\n41';
const a = s.seal(code),
  b = s.seal(request),
  both = s.seal(JSON.stringify([code, request])),
  picked = sealPick(s, id, code, requestData),
  r1 = s.seal(JSON.stringify(result)),
  t1 = s.seal(text),
  ended = sealEnded(s, id, { result, text });
let sink = 0;
if (mode === 'two') for (let i = 0; i < n; i++) sink += s.open(a).length + s.open(b).length;
else if (mode === 'one')
  for (let i = 0; i < n; i++) {
    const [c, r] = JSON.parse(s.open(both));
    sink += c.length + r.length;
  }
else if (mode === 'pick')
  for (let i = 0; i < n; i++) {
    const p = openPick(s, id, picked);
    sink += p.code.length + p.request.bindings.length;
  }
else if (mode === 'seal2') for (let i = 0; i < n; i++) sink += s.seal(code).length + s.seal(request).length;
else if (mode === 'seal1') for (let i = 0; i < n; i++) sink += s.seal(JSON.stringify([code, request])).length;
else if (mode === 'sealpick') for (let i = 0; i < n; i++) sink += sealPick(s, id, code, requestData).length;
else if (mode === 'end2')
  for (let i = 0; i < n; i++) sink += s.seal(JSON.stringify(result)).length + s.seal(text).length;
else if (mode === 'ended') for (let i = 0; i < n; i++) sink += sealEnded(s, id, { result, text }).length;
else if (mode === 'readend2')
  for (let i = 0; i < n; i++) sink += JSON.parse(s.open(r1)).logs.length + s.open(t1).length;
else if (mode === 'readended') for (let i = 0; i < n; i++) sink += openEnded(s, id, ended).text.length;
else throw new Error(`unknown mode ${mode}`);
console.log(mode, n, sink, 'bytes', {
  two: a.length + b.length,
  pick: picked.length,
  end2: r1.length + t1.length,
  ended: ended.length,
});
