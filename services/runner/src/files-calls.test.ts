/** files.* calls in the runner: journaled per (run, index), replay-safe, denials with the contract text. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis, createSealer } from '@islet/core';
import { closeFilesHelpers, WorkspaceStore } from '@islet/kernel-sandbox';
import { createCallJournal, createRunStore } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFilesCalls } from './files-calls.ts';

let server: RedisServer;
let redis: Redis;
let root: string;
const sealer = createSealer({ keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: 'k1' });

beforeAll(async () => {
  server = await startRedis();
  redis = createRedis(server.url);
  root = await mkdtemp(join(tmpdir(), 'islet-files-calls-'));
});
afterAll(async () => {
  closeFilesHelpers();
  redis?.disconnect();
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

const journalFor = () => createCallJournal({ redis, sealer });
const store = () => new WorkspaceStore({ root });
const runStore = () => createRunStore(redis, sealer);

describe('createFilesCalls', () => {
  it('journals each call with its source and answers a replay from the journal', async () => {
    const journal = journalFor();
    const run = { id: 'run-files-1', tenant: 't1', session: 's1', mode: 'workspace-write' as const };
    const attempt = await journal.nextAttempt(run.id);
    const files = createFilesCalls({
      journal,
      events: runStore(),
      store: store(),
      run,
      attempt,
      enforcement: 'full',
    });
    const wrote = await files.call({
      index: 0,
      binding: 'files.write',
      argsJson: '{"path":"a.txt","content":"one"}',
    });
    expect(wrote.outcome).toEqual({ type: 'result', valueJson: '{"path":"a.txt","sizeBytes":3}' });
    expect(wrote.deliverySeq).toBe(1);
    const read = await files.call({ index: 1, binding: 'files.read', argsJson: '{"path":"a.txt"}' });
    expect(JSON.parse((read.outcome as { valueJson: string }).valueJson).content).toBe('one');
    const entries = await journal.list(run.id);
    expect(entries.map((e) => [e.index, e.binding, e.state, e.source?.connectionId, e.source?.name])).toEqual(
      [
        [0, 'files.write', 'done', 'files', 'write'],
        [1, 'files.read', 'done', 'files', 'read'],
      ],
    );

    // The file changes; a later attempt that reaches the same call gets the journaled outcome.
    await store().workspace('t1', 's1').write('a.txt', Buffer.from('two'));
    const next = createFilesCalls({
      events: runStore(),
      journal,
      store: store(),
      run,
      attempt: await journal.nextAttempt(run.id),
      enforcement: 'full',
    });
    const again = await next.call({ index: 1, binding: 'files.read', argsJson: '{"path":"a.txt"}' });
    expect(JSON.parse((again.outcome as { valueJson: string }).valueJson).content).toBe('one');
    expect(again.deliverySeq).toBe(2);
    // Different arguments at a journaled index: the program diverged.
    const other = await next.call({ index: 1, binding: 'files.read', argsJson: '{"path":"b.txt"}' });
    expect(other.outcome).toMatchObject({ type: 'stop', code: 'replay-mismatch' });
    // The old attempt is superseded.
    const zombie = await files.call({ index: 2, binding: 'files.list', argsJson: '{}' });
    expect(zombie.outcome).toMatchObject({ type: 'stop', code: 'cancelled' });
  });

  it('performs a call again when an earlier attempt sent it but never journaled its outcome', async () => {
    const journal = journalFor();
    const run = { id: 'run-files-2', tenant: 't1', session: 's2', mode: 'workspace-write' as const };
    const call = { index: 0, binding: 'files.write', argsJson: '{"path":"b.txt","content":"bee"}' };
    const first = await journal.nextAttempt(run.id);
    const claim = await journal.claim(run.id, first, call);
    expect(claim.kind).toBe('new');
    await journal.markSent(run.id, 0, claim.kind === 'new' ? claim.token : undefined); // …then the runner died
    const files = createFilesCalls({
      events: runStore(),
      journal,
      store: store(),
      run,
      attempt: await journal.nextAttempt(run.id),
      enforcement: 'full',
    });
    const got = await files.call(call);
    expect(got.outcome).toEqual({ type: 'result', valueJson: '{"path":"b.txt","sizeBytes":3}' });
    expect(await readFile(join(root, 't1', 's2', 'b.txt'), 'utf8')).toBe('bee');
  });

  it('denies changes in read-only with the contract text, journaled; bad sessions fail clearly', async () => {
    const journal = journalFor();
    const run = { id: 'run-files-3', tenant: 't1', session: 's3', mode: 'read-only' as const };
    const files = createFilesCalls({
      events: runStore(),
      journal,
      store: store(),
      run,
      attempt: await journal.nextAttempt(run.id),
      enforcement: 'partial',
    });
    const denied = await files.call({ index: 0, binding: 'files.remove', argsJson: '{"path":"x"}' });
    expect(denied.outcome).toMatchObject({
      type: 'error',
      name: 'AppCallFailed',
      message: 'File sandbox: read-only; enforcement: partial; operation denied',
      details: { reason: 'mode' },
    });
    expect((await journal.list(run.id))[0]?.outcome).toEqual(denied.outcome);

    const bad = createFilesCalls({
      events: runStore(),
      journal,
      store: store(),
      run: { ...run, id: 'run-files-4', session: '../escape' },
      attempt: await journal.nextAttempt('run-files-4'),
      enforcement: 'full',
    });
    const refused = await bad.call({ index: 0, binding: 'files.list', argsJson: '{}' });
    expect(refused.outcome).toMatchObject({ type: 'error', details: { reason: 'invalid-session' } });
  });

  it('never throws: a journal failure reaches the program as a catchable AppCallFailed', async () => {
    const journal = journalFor();
    const broken = {
      ...journal,
      claim: async () => {
        throw new Error('Connection is closed.');
      },
    };
    const files = createFilesCalls({
      events: runStore(),
      journal: broken,
      store: store(),
      run: { id: 'run-files-5', tenant: 't1', session: 's5', mode: 'read-only' },
      attempt: 1,
      enforcement: 'full',
    });
    const got = await files.call({ index: 0, binding: 'files.list', argsJson: '{}' });
    expect(got.outcome).toMatchObject({
      type: 'error',
      name: 'AppCallFailed',
      details: { reason: 'journal-unavailable' },
    });
  });

  it("appends the run stream's call event with the outcome, as an App call does, and not again on a replay", async () => {
    const journal = journalFor();
    const runs = runStore();
    const run = { id: 'run-files-6', tenant: 't1', session: 's6', mode: 'workspace-write' as const };
    const files = createFilesCalls({
      journal,
      events: runs,
      store: store(),
      run,
      attempt: 1,
      enforcement: 'full',
    });
    const call = { index: 0, binding: 'files.write', argsJson: '{"path":"e.txt","content":"hi"}' };
    await files.call(call);
    const events = (await runs.readEvents(run.id)).filter((e) => e.type === 'call');
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({
      index: 0,
      binding: 'files.write',
      source: { connectionId: 'files', connectionName: 'files', name: 'write', kind: 'tool' },
      outcome: { _tag: 'Done', result: { _tag: 'Completed', value: { path: 'e.txt', sizeBytes: 2 } } },
      arguments: { path: 'e.txt', content: 'hi' },
    });
    // A later attempt that reaches the same call is answered from the journal: no second event.
    const again = createFilesCalls({
      journal,
      events: runs,
      store: store(),
      run,
      attempt: 2,
      enforcement: 'full',
    });
    await again.call(call);
    expect((await runs.readEvents(run.id)).filter((e) => e.type === 'call')).toHaveLength(1);
  });
});
