// A run's events in the AOF (includes/event-add.lua, test/bench/README.md round 36 `aof-trim`):
// appended without MAXLEN while the stream is below its cap (Redis propagates an XADD given
// MAXLEN with `MAXLEN = <length>`, 26 bytes more an event), with it from the cap on; the stream
// the same either way. Read from a real redis-server's AOF.
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { aofCommands, newestIncrAof, runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { createCallJournal } from './call-journal.ts';
import { createRunLifecycle } from './run-lifecycle.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

describe("a run's events in the AOF", () => {
  it('go without MAXLEN below the cap and with it at the cap; the stream is what the trim leaves', async () => {
    const server = await startRedis();
    const redis = createRedis(server.url);
    try {
      const file = newestIncrAof(join(server.dir, 'appendonlydir'));
      const events = async (from: number) =>
        Array.from(aofCommands((await readFile(file)).subarray(from)), ({ args }) => args).filter(
          (a) => a[0]?.toUpperCase() === 'XADD' && a[1]?.endsWith(':events'),
        );
      for (const cap of [10, 2]) {
        const runs = createRunStore(redis, sealer, { maxEventsPerRun: cap });
        const lifecycle = createRunLifecycle({ runs, journal: createCallJournal({ redis, sealer }) });
        const id = `e${cap}`;
        const from = statSync(file).size;
        const run = runFixture(id, { tenant: 't1' });
        await runs.create(run);
        expect((await lifecycle.beginAttempt(id)).attempt).toBe(1);
        const result = { _tag: 'Completed' as const, value: 1, logs: [] };
        expect(await runs.finish(run, { status: 'Completed', result, text: '1' })).toBe(true);
        const xadds = await events(from);
        // The create's status event, the start's, the end's.
        expect(xadds.map((a) => a[1])).toEqual([keys.runEvents(id), keys.runEvents(id), keys.runEvents(id)]);
        const trimmed = xadds.map((a) => a.includes('MAXLEN'));
        // Below the cap (10: 0, 1 and 2 entries before): none. At it (2: the end's, 2 before): Redis's exact form.
        expect(trimmed).toEqual(cap === 10 ? [false, false, false] : [false, false, true]);
        if (cap === 2) expect(xadds[2]?.slice(2, 5)).toEqual(['MAXLEN', '=', '3']);
        // Each untrimmed XADD is the bare `XADD <key> <id> <field> <value> …`.
        for (const a of xadds.filter((x) => !x.includes('MAXLEN'))) expect(a[2]).toMatch(/^\d+-\d+$/);
        // The stream as an approximate trim leaves it: whole nodes only, so all three stay.
        expect((await runs.readEvents(id)).map((e) => e.type)).toEqual(['status', 'status', 'end']);
      }
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
