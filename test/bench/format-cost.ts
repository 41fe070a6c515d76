/**
 * `node test/bench/format-cost.ts`: instructions of the hand-off's two format-bound items inside
 * a script, each in a loop of `N` in one EVAL on a redis-server under callgrind (only script calls
 * counted), less the loop's own: the registration's terms read (`cjson.decode` against other
 * layouts) and the answer packed (`cmsgpack.pack` against other writers). `TERMS` / `HANDED`: a
 * recorded terms text and handed member (script-replay.ts `SOURCES_TO`); else shaped as a runner's.
 */
import { readFileSync } from 'node:fs';
import { callgrindRedis } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 200);
const VARIANTS: Record<string, string> = JSON.parse(process.env.VARIANTS ?? '{}');
const { r, instructions, stop } = await callgrindRedis('format-cost');
try {
  await r.ping();
  const terms = readFileSync(process.env.TERMS ?? '/tmp/sf/terms.txt', 'latin1').trimEnd();
  const handed = readFileSync(process.env.HANDED ?? '/tmp/sf/handed.bin');
  const setup = readFileSync(process.env.SETUP ?? '/tmp/sf/setup.lua', 'utf8');
  const loop = (body: string) => `${setup}
local ARGT, HANDED = ARGV[1], ARGV[2]
local x
for i = 1, ${N} do
${body}
end
return 1`;
  const run = async (body: string) => {
    const before = instructions();
    await r.eval(loop(body), 0, terms, handed);
    return instructions() - before;
  };
  const empty = await run('x = i');
  for (const round of [1, 2])
    for (const [label, body] of Object.entries(VARIANTS)) {
      const got = await run(body);
      console.log(`${round} ${label.padEnd(24)} ${((got - empty) / N).toFixed(0)}`);
    }
} finally {
  await stop();
}
