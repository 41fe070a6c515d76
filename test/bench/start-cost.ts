/**
 * `node test/bench/start-cost.ts`: instructions of a fetch's job start (bull-quiet.ts's prelude,
 * bull-start.ts: `bullStartJob`, the lean form, against its general form (`general` true) every start
 * took before round 35's `end-lua`) in a redis-server under callgrind (`redis-callgrind.sh`: only
 * script calls counted). Each call makes the job's hash afresh (DEL, HSET of a BullMQ job's six
 * fields, `ats` when `STARTED=1`) then starts it; a phase of the same script without the start is
 * subtracted. `N` calls a phase (default 300), phases alternated. A count no load moves.
 */
import { BULL_QUIET_PRELUDE } from '@islet/runs';
import { callgrindRedis } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 300);
const { r, instructions, stop } = await callgrindRedis('start-cost');
try {
  await r.ping();
  const source = `${BULL_QUIET_PRELUDE}
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'name', 'run', 'data', '{"input":{"a":1}}', 'opts', '{"attempts":3,"jobId":"x"}',
  'timestamp', '1765000000000', 'delay', '0', 'priority', '0')
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'processedOn', '1765000000000', 'pb', 'w', 'ats', '1') end
local extra = {}
if ARGV[2] ~= '' then extra = {'pb', ARGV[2]} end
if ARGV[1] == 'lean' then return #bullStartJob(KEYS[1], '1765000000123', extra) end
if ARGV[1] == 'any' then return #bullStartJob(KEYS[1], '1765000000123', extra, true) end
return 0`;
  const sha = (await r.script('LOAD', source)) as string;
  const started = process.env.STARTED === '1' ? '1' : '';
  for (const name of ['runner-1', '']) {
    const phase = async (form: string) => {
      const before = instructions();
      for (let i = 0; i < N; i++) await r.evalsha(sha, 1, 'islet:{runs-read-only}:j1', form, name, started);
      return (instructions() - before) / N;
    };
    const got: Record<string, number[]> = { none: [], lean: [], any: [] };
    for (const form of ['none', 'lean', 'any', 'any', 'lean', 'none']) got[form]!.push(await phase(form));
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const none = avg(got.none!);
    console.log(
      `${name ? 'named worker' : 'unnamed worker'}${started ? ', started before' : ''}: the start's instructions a call: lean ${(avg(got.lean!) - none).toFixed(0)} (${got.lean!.map((x) => (x - none).toFixed(0)).join(' / ')}), general ${(avg(got.any!) - none).toFixed(0)} (${got.any!.map((x) => (x - none).toFixed(0)).join(' / ')})`,
    );
  }
} finally {
  await stop();
}
