/**
 * `node test/bench/gw-snapshot.ts` (round 38, `gw-memory`): what a settled gateway's live heap is
 * made of. A devstack cluster (1 gateway, 1 read-only runner) whose gateway runs with
 * `--heapsnapshot-signal=SIGUSR2`; after each of `AT` (comma-separated run counts, default
 * 2000,20000) trivial runs at `CLIENTS` (16) the gateway is signalled and its snapshot (taken after
 * a full collection: live objects only) is moved to `SNAP_DIR` (default a temp dir) as
 * `gateway-<runs>.heapsnapshot`; `heap-summary.py` sums one by kind and constructor. Counts only.
 * `DURING=1`: each snapshot is taken while the clients keep submitting (signalled once `AT`'s run
 * has finished, the burst going on to `AT + 500`), so what holds objects only under load is in it.
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';

const AT = (process.env.AT ?? '2000,20000').split(',').map(Number);
const CLIENTS = Number(process.env.CLIENTS ?? 16);
const DURING = process.env.DURING === '1';
const dir = process.env.SNAP_DIR ?? mkdtempSync(join(tmpdir(), 'islet-gw-snap-'));
mkdirSync(dir, { recursive: true });
const cwd = mkdtempSync(join(tmpdir(), 'islet-gw-cwd-'));
process.env.ISLET_DEV_NODE_FLAGS =
  `${process.env.ISLET_DEV_NODE_FLAGS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${cwd}`.trim();

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
const gw = cluster.gateways[0]?.pid ?? 0;
try {
  const once = trivialRun(cluster, 'gw-snapshot');
  let done = 0;
  let finished = 0;
  const counted = async () => {
    await once();
    finished++;
  };
  for (const at of AT) {
    const before = new Set(readdirSync(cwd));
    if (DURING) {
      // Signal from inside the burst, once `at` runs have finished; the rest of it keeps the load on.
      let signalled = false;
      await burst(
        async () => {
          await counted();
          if (!signalled && finished >= at) {
            signalled = true;
            process.kill(gw, 'SIGUSR2');
          }
        },
        at + 500 - done,
        CLIENTS,
      );
      done = at + 500;
    } else {
      await burst(counted, at - done, CLIENTS);
      done = at;
      process.kill(gw, 'SIGUSR2');
    }
    let file = '';
    // Node writes the snapshot under its final name as it goes: wait until its size stops growing.
    for (let last = -1; ; ) {
      await new Promise((r) => setTimeout(r, 500));
      file = readdirSync(cwd).find((f) => f.endsWith('.heapsnapshot') && !before.has(f)) ?? '';
      if (!file) continue;
      const size = statSync(join(cwd, file)).size;
      if (size === last && size > 0) break;
      last = size;
    }
    const to = join(dir, `gateway-${at}.heapsnapshot`);
    renameSync(join(cwd, file), to);
    console.log(`${new Date().toISOString()} ${at} runs: ${to}`);
  }
} finally {
  await cluster.stop();
}
