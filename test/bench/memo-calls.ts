/**
 * `node test/bench/memo-calls.ts`: does the gateway's own-seal memo (own-seal-memo.ts, as
 * `create-deps.ts` wires it) still hold a run's submit fields when other clients' runs make
 * binding calls meanwhile? For `CLIENTS` = 1, 5, 10, 20, 40: that many runs are submitted, each
 * makes `CALLS` (default 100) calls, whose `call` events the gateway seals (`runs.callEvent`, as the
 * journal's complete step does), interleaved; then each run is read back as its waiter does and
 * the decryptions counted (program, request: two a run when the memo lost them, none when it held
 * them). Real gateway deps on a real redis-server; a count, not a time.
 */
import { createLogger, generateSealKey, loadConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { createGatewayDeps } from '../../services/gateway/src/create-deps.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const redis = await startRedis({ appendOnly: false });
const deps = await createGatewayDeps(
  loadConfig({
    ISLET_REDIS_URL: redis.url,
    ISLET_SEAL_KEYS: generateSealKey(),
    ISLET_INTERNAL_TOKEN: 'internal-token-for-the-memo-bench',
  }),
  createLogger({ name: 'bench', level: 'silent' }),
);
try {
  const open = deps.sealer.open.bind(deps.sealer);
  let opens = 0;
  deps.sealer.open = (sealed: string) => {
    opens++;
    return open(sealed);
  };
  const rows: string[] = [];
  let n = 0;
  for (const clients of [1, 5, 10, 20, 40]) {
    const ids = Array.from({ length: clients }, () => `memo-${n++}`);
    for (const id of ids) await deps.runs.create(runFixture(id, { tenant: 't1' }));
    for (let i = 0; i < CALLS; i++)
      for (const id of ids)
        deps.runs.callEvent(id, {
          index: i,
          binding: 'notes.read',
          outcome: { _tag: 'Done', result: { _tag: 'Completed', value: { ok: i } } },
          arguments: { n: i },
          durationMs: 1,
        });
    opens = 0;
    for (const id of ids) await deps.runs.get(id);
    rows.push(`${clients} clients: decryptions a run at its read ${(opens / clients).toFixed(2)}`);
  }
  console.log(`${CALLS} calls a run\n${rows.join('\n')}`);
} finally {
  await deps.close();
  await redis.stop();
}
