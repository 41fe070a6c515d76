/**
 * `node test/bench/cluster-profile.ts`: CPU profiles (`--cpu-prof`) of a local cluster's gateway
 * and runner while 16 clients submit trivial runs (`SECS`, default 10; `CLIENTS`, default 16),
 * then each profile's self time by file and by function (`profile-summary.ts`). The profiles
 * stay in `PROF_DIR` (default a temp directory, printed) for Chrome DevTools or `profile-summary.ts
 * <file> <function>`, which prints that function's callers.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { trivialRun } from './cluster-figures.ts';
import { summarize } from './profile-summary.ts';

const dir = process.env.PROF_DIR ?? mkdtempSync(join(tmpdir(), 'islet-prof-'));
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}`,
  },
});
let runs = 0;
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };
try {
  const once = trivialRun(cluster, 'Profile a trivial program');
  const end = Date.now() + Number(process.env.SECS ?? 10) * 1000;
  await Promise.all(
    Array.from({ length: Number(process.env.CLIENTS ?? 16) }, async () => {
      while (Date.now() < end) {
        await once();
        runs++;
      }
    }),
  );
} finally {
  await cluster.stop();
}
console.log(`${runs} runs; profiles in ${dir}`);
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const kind = Object.entries(pids).find(([, pid]) => pid && file.includes(`.${pid}.`))?.[0] ?? 'other';
  console.log(`\n== ${kind} ${file}`);
  console.log(summarize(join(dir, file), runs));
}
