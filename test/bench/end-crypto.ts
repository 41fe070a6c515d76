/**
 * `node test/bench/end-crypto.ts`: AES-GCM ciphers and deciphers made a sequential trivial run by
 * the gateway and by the runner (`crypto-count.ts` preloaded into both; `BENCH_ENV` as
 * `sequential.ts`), over `RUNS` (default 200) after `WARM`
 * (default 50), from `CLIENTS` clients at once (default 1), and of the ciphers those made on a seal's
 * own path (none ready: made by the seal, not by the sealer's restock after the turn). A count, not a time: each is an OpenSSL context made (its cipher fetch, the key's
 * schedule), ~5 µs hot and 30–65 µs on a loaded path (test/bench/README.md, rounds 29 and 30).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 200);
const WARM = Number(process.env.WARM ?? 50);
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const dir = mkdtempSync(join(tmpdir(), 'islet-crypto-'));
const cluster = await startOneClientCluster('0.5', {
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'crypto-count.ts')}`,
  BENCH_CRYPTO_DIR: dir,
});
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };
type Counts = { ciphers: number; deciphers: number; onSpot: number; openUs?: number[] };
async function read(): Promise<Record<string, Counts>> {
  const out: Record<string, Counts> = {};
  for (const [who, pid] of Object.entries(pids)) {
    if (pid === undefined) continue;
    rmSync(join(dir, `${pid}.json`), { force: true });
    process.kill(pid, 'SIGUSR2');
    for (let i = 0; i < 100; i++) {
      try {
        out[who] = JSON.parse(readFileSync(join(dir, `${pid}.json`), 'utf8')) as Counts;
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
  return out;
}
try {
  const once = trivialRun(cluster, 'Crypto count');
  await burst(once, WARM, CLIENTS);
  const a = await read();
  await burst(once, RUNS, CLIENTS);
  const b = await read();
  for (const who of Object.keys(b)) {
    const per = (k: 'ciphers' | 'deciphers' | 'onSpot') =>
      ((b[who]![k] - (a[who]?.[k] ?? 0)) / RUNS).toFixed(2);
    const us = (b[who]!.openUs ?? []).sort((x, y) => x - y);
    const at = (q: number) => (us[Math.floor(q * (us.length - 1))] ?? Number.NaN).toFixed(1);
    if (us.length)
      console.log(
        `${who}: a decipher (construction to final) p50 ${at(0.5)} µs, p90 ${at(0.9)}, n ${us.length}`,
      );
    console.log(
      `${who}: ${per('ciphers')} ciphers (${per('onSpot')} made on a seal's path), ${per('deciphers')} deciphers a run (${RUNS} runs, ${CLIENTS} client(s))`,
    );
  }
} finally {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
