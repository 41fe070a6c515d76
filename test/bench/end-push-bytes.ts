/**
 * `node test/bench/end-push-bytes.ts` (round 37, `end-open`): what a `Prefer: wait` run's pushed end
 * (`<id> end [record, journal]`, includes/transition.lua) carries through Redis to its gateway, field
 * by field. A local cluster as `sequential.ts` sets it up, `WARM` trivial runs (default 20), then
 * `RUNS` (default 100) one after another while a subscriber of its own reads `islet:run-events`;
 * prints the mean message bytes, the record's and the journal's, and each record field's (name and
 * value), marking the fields the waiting gateway sealed itself at the submit (its own-seal memo
 * answers their opens: no decryption) and those the end wrote (opened: decrypted). A count: no
 * lock needed.
 */
import { channels, createRedis } from '@islet/core';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 100);
const WARM = Number(process.env.WARM ?? 20);
/** Sealed at the submit by the gateway that waits (recordFields in run-store-args.ts; `pick` with ISLET_WRITE_FORMAT=2). */
const SUBMIT_SEALED = new Set(['code', 'request', 'description', 'pick']);
/** Sealed by the runner at the end (endFields in run-store-args.ts; `ended` with ISLET_WRITE_FORMAT=2). */
const END_SEALED = new Set(['result', 'text', 'textRef', 'ended']);

const cluster = await startOneClientCluster(process.env.BENCH_TENANT_SHARE ?? '0.5');
const sub = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, () => performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const pushes: string[] = [];
  sub.on('message', (_channel: string, message: string) => {
    // `end` (the whole record, before round 41) or `end2` (round 41 `push-lean`: the end's fields).
    if (/^\S+ end2? /.test(message)) pushes.push(message);
  });
  await sub.subscribe(channels.runEvents);
  for (let i = 0; i < RUNS; i++) await once();
  await new Promise((r) => setTimeout(r, 200));
  const fields = new Map<string, number>();
  let total = 0;
  let record = 0;
  let journal = 0;
  for (const message of pushes) {
    total += Buffer.byteLength(message);
    const json = message.slice(message.indexOf(' [') + 1);
    record += Buffer.byteLength(JSON.stringify(JSON.parse(json)[0]));
    journal += Buffer.byteLength(JSON.stringify(JSON.parse(json)[1]));
    const [flat] = JSON.parse(json) as [string[], unknown];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = flat[i] as string;
      fields.set(name, (fields.get(name) ?? 0) + Buffer.byteLength(String(flat[i + 1])) + name.length);
    }
  }
  const n = pushes.length;
  console.log(
    `${n} pushed ends of ${RUNS} runs: ${(total / n).toFixed(0)} B a message (record ${(record / n).toFixed(0)} B as JSON, journal ${(journal / n).toFixed(0)} B)`,
  );
  let own = 0;
  for (const [name, bytes] of [...fields].sort((a, b) => b[1] - a[1])) {
    const tag = SUBMIT_SEALED.has(name)
      ? 'sealed at the submit (memo)'
      : END_SEALED.has(name)
        ? 'sealed at the end (opened)'
        : '';
    if (SUBMIT_SEALED.has(name)) own += bytes;
    console.log(`  ${name.padEnd(16)} ${(bytes / n).toFixed(0).padStart(5)} B ${tag}`);
  }
  console.log(
    `the submit's own sealed fields: ${(own / n).toFixed(0)} B a message (${((own / total) * 100).toFixed(0)} %)`,
  );
} finally {
  sub.disconnect();
  await cluster.stop();
}
process.exit(0);
