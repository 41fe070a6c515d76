/**
 * `bash scripts/toolchain.sh node test/bench/slots-curve.ts`: the throughput curve of a trivial run
 * over HTTP (`Prefer: wait`, 16 concurrent clients) against the runner's slots (concurrency), each
 * as a ratio to raw isolated-vm measured in this process just before, on a fresh local cluster
 * (1 gateway, 1 read-only runner). What the runner's default ISLET_RUNNER_CONCURRENCY is set from.
 *
 * BENCH_SECONDS (default 4): seconds measured per point, after a warm-up at the same concurrency.
 * BENCH_SLOTS_LIST (default 1,2,4,8,16).
 */
import { spawn } from 'node:child_process';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const LIST = (process.env.BENCH_SLOTS_LIST ?? '1,2,4,8,16').split(',').map(Number);

async function main(): Promise<void> {
  const { measure, PROGRAM, rawIsolateBaseline } = await import('./baselines.ts');
  const { startCluster } = await import('@islet/devstack');
  const { api } = await import('../e2e/helpers.ts');
  console.log(`slots curve — 16 clients, ${SECONDS}s per point, trivial program, Node ${process.version}`);
  console.log(
    `${'slots'.padStart(5)}${'runs/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'raw/s'.padStart(9)}${'vs raw'.padStart(9)}`,
  );
  for (const slots of LIST) {
    const raw = await rawIsolateBaseline(SECONDS / 2);
    const cluster = await startCluster({
      gateways: 1,
      runners: [{ modes: ['read-only'], concurrency: slots }],
      // As the cluster bench: one tenant drives it, so the tenant policies would measure themselves.
      env: { ISLET_TENANT_POOL_SHARE: '1', ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
    });
    try {
      const a = api(cluster.url, cluster.devKey);
      const once = async () => {
        const res = await a(
          'POST',
          '/v1/runs',
          {
            code: PROGRAM,
            description: 'Benchmark a trivial program',
            sessionId: 'bench',
            turnId: 't',
            callId: 'c',
          },
          { prefer: 'wait=30' },
        );
        const status = (res.body as { status?: string })?.status;
        if (status !== 'Completed') throw new Error(`run ended ${JSON.stringify(res.body)}`);
      };
      // Warm-up at the measured concurrency: every slot's sandbox host started before measuring.
      await measure(once, { seconds: 1, clients: 16, warmup: 0 });
      const s = await measure(once, { seconds: SECONDS, clients: 16, warmup: 0 });
      const f = (n: number, d = 1) => n.toFixed(d).padStart(9);
      console.log(
        `${String(slots).padStart(5)}${f(s.perSec)}${f(s.p50)}${f(s.p99)}${f(raw.perSec)}${f(s.perSec / raw.perSec, 2)}x`,
      );
    } catch (e) {
      // A point that cannot run on this machine (e.g. more sandbox hosts starting at once than it can
      // start within their start-up timeout) is reported, and the curve goes on.
      console.log(`${String(slots).padStart(5)}  failed: ${(e as Error).message.slice(0, 160)}`);
    } finally {
      await cluster.stop();
    }
  }
}

// isolated-vm needs --no-node-snapshot on Node >= 20 in this process too (for the raw baseline).
if (!process.execArgv.includes('--no-node-snapshot')) {
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', ...process.execArgv, ...process.argv.slice(1)],
    {
      stdio: 'inherit',
    },
  );
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}
