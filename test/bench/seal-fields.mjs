// Bench only (round 39 `sealer`, round 40 `seal-one`): `node test/bench/seal-fields.mjs <mode> <n>`
// under `valgrind --tool=callgrind` (node `--single-threaded`: no concurrent compiler or GC threads,
// so two runs count alike), n = 1000 and 6000; the difference ÷ 5000 is one warm iteration's
// instructions (the compilation is in both). Modes:
//   two / one          a pick-up's two opens (program, request) / round 39's one open of [code, request]
//   twoparse           the pick-up as format 1 reads it (run-reads.ts: two opens, the request parsed)
//   pick               the pick-up as format 2 reads it (sealed-fields.ts `openPick`: bound, then parsed)
//   seal2 / seal1      the submit's two seals / one of [code, request] (round 39's probe)
//   seal2req           the submit's two seals as format 1 makes them (the request stringified)
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
// Each mode's loop a function of its own: a loop in the module's top level is optimized (OSR) with
// the whole module, so one mode's count would carry the others' compilation.
const modes = {
  two: () => s.open(a).length + s.open(b).length,
  twoparse: () => s.open(a).length + JSON.parse(s.open(b)).bindings.length,
  one: () => {
    const [c, r] = JSON.parse(s.open(both));
    return c.length + r.length;
  },
  pick: () => {
    const p = openPick(s, id, picked);
    return p.code.length + p.request.bindings.length;
  },
  seal2: () => s.seal(code).length + s.seal(request).length,
  seal2req: () => s.seal(code).length + s.seal(JSON.stringify(requestData)).length,
  seal1: () => s.seal(JSON.stringify([code, request])).length,
  sealpick: () => sealPick(s, id, code, requestData).length,
  end2: () => s.seal(JSON.stringify(result)).length + s.seal(text).length,
  ended: () => sealEnded(s, id, { result, text }).length,
  readend2: () => JSON.parse(s.open(r1)).logs.length + s.open(t1).length,
  readended: () => openEnded(s, id, ended).text.length,
};
const step = modes[mode];
if (!step) throw new Error(`unknown mode ${mode}`);
let sink = 0;
for (let i = 0; i < n; i++) sink += step();
console.log(mode, n, sink, 'bytes', {
  two: a.length + b.length,
  pick: picked.length,
  end2: r1.length + t1.length,
  ended: ended.length,
});
