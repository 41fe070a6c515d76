/**
 * `node test/bench/register-cost.ts`: instructions of an idle worker's registration
 * (`REGISTER_IDLE`, sent as EVAL with its text at every registration, handoff-store.ts) in a
 * redis-server under callgrind (`redis-callgrind.sh`: only script calls counted), with ~1 KB of
 * terms shaped as a runner's; beside it the same script by EVALSHA (what the text's hash costs).
 * `N` calls a phase (default 500), phases alternated. A count no load moves (round 34, `seq-path`).
 */
import { REGISTER_IDLE } from '@islet/runs';
import { FETCH_KEY_NAMES } from '../../services/runner/src/handoff-store.ts';
import { callgrindRedis } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 500);
const { r, instructions, stop } = await callgrindRedis('register-cost');
try {
  await r.ping();
  const p = 'islet:{runs-read-only}:';
  const terms = JSON.stringify({
    keys: FETCH_KEY_NAMES.map((k) => p + k),
    prefix: p,
    token: 'a1b2c3d4-e5f6-4789-9abc-def012345678:17',
    lockDuration: 30000,
    name: 'runner-1',
    startArgs: Array.from({ length: 24 }, (_, i) =>
      i % 3 === 0 ? `islet:tenant:{t:dev}:pool:read-only:x${i}` : String(1000 + i),
    ),
    handOff: `${p}handoff:worker-1`,
  });
  const keys = [`${p}idle`, `${p}idle:args`, `${p}handoff:worker-1`, `${p}handoff:worker-1:closed`];
  const sha = (await r.script('LOAD', REGISTER_IDLE.source)) as string;
  const viaEval = () => r.eval(REGISTER_IDLE.source, 4, ...keys, 'worker-1', 7000, terms);
  const viaSha = () => r.evalsha(sha, 4, ...keys, 'worker-1', 7000, terms);
  console.log(`terms ${terms.length} B; instructions a call (callgrind, script calls only):`);
  for (const [label, call] of [
    ['EVAL', viaEval],
    ['EVALSHA', viaSha],
    ['EVALSHA', viaSha],
    ['EVAL', viaEval],
  ] as const) {
    const before = instructions();
    for (let i = 0; i < N; i++) await call();
    console.log(`  ${label.padEnd(8)} ${((instructions() - before) / N).toFixed(0)}`);
  }
} finally {
  await stop();
}
