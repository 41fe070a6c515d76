/**
 * A journal read (the waiter's answer at a run's end, `callsOf` of its pushed journal, and
 * `listCalls`/`list`) parses each distinct source text once (round 39, `call-end`): the calls of one
 * binding share one source object, each call's view still carries it as journaled.
 */
import { fieldsOf } from '@islet/core/lua-script';
import type { BindingOutcome } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';
import type { CallSource } from './types.ts';

const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });
const PING: CallSource = { connectionId: 'conn-1', connectionName: 'Bench', name: 'ping', kind: 'tool' };
const READ: CallSource = { connectionId: 'conn-2', connectionName: 'Notes', name: 'read', kind: 'resource' };

describe('a journal read parses a source text once', () => {
  const r = useSuiteRedis();
  const sealer = createTestSealer();

  it('gives the calls of one binding one source object, equal to what was journaled', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = `run-sources-${Date.now()}`;
    const sources = [PING, READ, PING, PING, READ];
    for (const [index, source] of sources.entries()) {
      const binding = source === PING ? 'bench.ping' : 'notes.read';
      expect((await journal.claim(run, 1, { index, binding, argsJson: `{"i":${index}}`, source })).kind).toBe(
        'new',
      );
      await journal.markSent(run, index);
      await journal.complete(run, index, result({ ok: index }));
    }
    // The waiter's path: the journal as the end's push carries it, flat.
    const flat = await r.a.call('HGETALL', `islet:journal:{${run}}`);
    for (const views of [
      journal.callsOf(fieldsOf(flat)),
      // The same flat as this release pushes it (`end2`), and as the next one will (`end3`: entries
      // and sources as JSON values, round 42 `format-next`): one source object a source there too.
      journal.callsOfPushed(flat),
      journal.callsOfPushed(
        (flat as string[]).map((v, i, all) =>
          i % 2 === 1 && (all[i - 1]!.charCodeAt(0) !== 35 || all[i - 1]!.startsWith('#s:'))
            ? JSON.parse(v)
            : v,
        ),
      ),
      await journal.listCalls(run),
      await journal.list(run),
    ]) {
      expect(views.map((v) => v.source)).toEqual(sources);
      expect(views.map((v) => v.outcome)).toEqual(sources.map((_, i) => result({ ok: i })));
      // One object a source text (the base parsed it once a call: five objects).
      expect(views[2]?.source).toBe(views[0]?.source);
      expect(views[3]?.source).toBe(views[0]?.source);
      expect(views[4]?.source).toBe(views[1]?.source);
      expect(views[1]?.source).not.toBe(views[0]?.source);
    }
    // Two reads share nothing: an answer's objects are its own.
    const [a, b] = [await journal.listCalls(run), await journal.listCalls(run)];
    expect(a[0]?.source).not.toBe(b[0]?.source);
  });
});
