/**
 * The operator's memory as its pod's cgroup counts it: the real main.ts in a cgroup of its own
 * (cgroup v1 memory controller), against the FAKE Kubernetes API (test double, workloads
 * simulated) and a real Redis, with N RunnerPools and queued jobs, for a while. Prints the
 * peak working set (usage - inactive_file, what the kubelet evicts and the OOM killer acts on) and
 * the peak usage, for docs/capacity.md. Needs root and /sys/fs/cgroup/memory.
 *
 *   npm run bench:operator-memory -- [pools=100] [seconds=60]
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runQueueName, SANDBOX_MODES } from '@islet/protocol';
import { spawnOwned, startRedis, stopOwned } from '@islet/testkit';
import { Queue } from 'bullmq';
import { FakeKubeApi } from '../../services/operator/test/fake-kube-api.ts';
import { NS, POOLS, runnerPool } from '../../services/operator/test/operator-fixture.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const POOL_COUNT = Number(process.argv[2] ?? 100);
const SECONDS = Number(process.argv[3] ?? 60);
const CGROUP_ROOT = '/sys/fs/cgroup/memory';

if (!existsSync(join(CGROUP_ROOT, 'cgroup.procs'))) {
  console.log('operator-memory: no cgroup v1 memory controller here; nothing measured');
  process.exit(0);
}

const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
const redis = await startRedis({ appendOnly: false });
const api = await FakeKubeApi.start({ simulateWorkloads: true });
const dir = mkdtempSync(join(tmpdir(), 'islet-opmem-'));
const cg = join(CGROUP_ROOT, `islet-operator-${process.pid}`);
let child: ReturnType<typeof spawnOwned> | undefined;
try {
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake', cluster: { server: api.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'fake', user: { token: 'operator' } }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
      'current-context': 'fake',
    }),
  );
  mkdirSync(cg);
  child = spawnOwned(process.execPath, [join(ROOT, 'services/operator/src/main.ts')], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      ISLET_NAMESPACE: NS,
      ISLET_REDIS_URL: redis.url,
      ISLET_OPERATOR_METRICS_PORT: '0',
      ISLET_OPERATOR_HOST: '127.0.0.1',
      ISLET_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  writeFileSync(join(cg, 'cgroup.procs'), String(child.pid));
  const queues = SANDBOX_MODES.map(
    (m) => new Queue(runQueueName(m), { connection: { port: redis.port }, prefix: 'islet' }),
  );
  for (const q of queues)
    await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'run', data: { i } })));
  for (let i = 0; i < POOL_COUNT; i++) {
    api.apply(
      POOLS,
      NS,
      runnerPool(`pool-${i}`, { mode: SANDBOX_MODES[i % SANDBOX_MODES.length], maxReplicas: 5 }),
    );
  }
  let peakWorkingSet = 0;
  const stat = () => {
    const usage = Number(readFileSync(join(cg, 'memory.usage_in_bytes'), 'utf8'));
    const inactive = Number(
      /^total_inactive_file (\d+)$/m.exec(readFileSync(join(cg, 'memory.stat'), 'utf8'))?.[1] ?? 0,
    );
    return usage - inactive;
  };
  for (let s = 0; s < SECONDS; s++) {
    await new Promise((r) => setTimeout(r, 1000));
    peakWorkingSet = Math.max(peakWorkingSet, stat());
  }
  const peakUsage = Number(readFileSync(join(cg, 'memory.max_usage_in_bytes'), 'utf8'));
  const rss = Number(/^total_rss (\d+)$/m.exec(readFileSync(join(cg, 'memory.stat'), 'utf8'))?.[1] ?? 0);
  console.log(
    `operator-memory: ${POOL_COUNT} pools, ${SECONDS} s: working set now ${mib(stat())} MiB, peak ${mib(peakWorkingSet)} MiB; rss ${mib(rss)} MiB; cgroup peak usage ${mib(peakUsage)} MiB`,
  );
  for (const q of queues) await q.close();
} finally {
  await stopOwned(child, 'SIGKILL');
  // The cgroup can go once its process has.
  for (let i = 0; i < 50 && existsSync(cg); i++) {
    try {
      rmdirSync(cg);
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await api.stop();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
