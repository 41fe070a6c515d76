// Bench only (round 39 `sealer`): `node test/bench/seal-fields.mjs <two|one|seal2|seal1> <n>` under
// `valgrind --tool=callgrind`, n = 0 and 2000; the difference ÷ 2000 is one iteration's instructions.
// mode two: a pick-up's two opens (program, request); one: the same plaintexts sealed as one field.
import { createSealer } from '../../services/core/src/sealer.ts';

const [mode, nText] = process.argv.slice(2);
const n = Number(nText);
const s = createSealer({ keys: { k1: Buffer.alloc(32, 3) }, activeKeyId: 'k1' });
const code = `export default async () => { return ${'1 + '.repeat(40)}1; }`;
const request = JSON.stringify({
  style: 'run_code',
  limits: { memoryMb: 64, timeoutMs: 30000 },
  connections: [],
  bindings: [],
  submittedBy: 'key_0123456789abcdef',
});
const a = s.seal(code),
  b = s.seal(request),
  both = s.seal(JSON.stringify([code, request]));
let sink = 0;
if (mode === 'two') for (let i = 0; i < n; i++) sink += s.open(a).length + s.open(b).length;
else if (mode === 'one')
  for (let i = 0; i < n; i++) {
    const [c, r] = JSON.parse(s.open(both));
    sink += c.length + r.length;
  }
else if (mode === 'seal2') for (let i = 0; i < n; i++) sink += s.seal(code).length + s.seal(request).length;
else if (mode === 'seal1') for (let i = 0; i < n; i++) sink += s.seal(JSON.stringify([code, request])).length;
console.log(mode, n, sink);
