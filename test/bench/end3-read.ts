/**
 * `node test/bench/end3-read.ts <calls> <end2|end3> <n>` (round 42 `format-next`), under
 * `valgrind --tool=callgrind` (node `--single-threaded`), n = 200 and 1200: the difference ÷ 1000 is
 * one warm read's instructions. The gateway's parse of a waited run's pushed end and its journal's
 * calls, as runs-service.ts `endOf` reads them (`JSON.parse` of the payload, `callsOfPushed` of its
 * journal: each call's outcome opened), on the messages `end3-push.ts` kept (`OUT`, default
 * /tmp/end3-push.json) for a run of `calls` calls. Checks first that both forms give the same views.
 */
import { readFileSync } from 'node:fs';
import { sealerFromConfig } from '@islet/core';
import { createCallJournal } from '@islet/runs';
import type { Redis } from 'ioredis';

const [calls = '20', tag = 'end3', nText = '200'] = process.argv.slice(2);
const saved = JSON.parse(readFileSync(process.env.OUT ?? '/tmp/end3-push.json', 'utf8')) as {
  sealKeys: string;
  kept: Record<string, Record<'end2' | 'end3', string>>;
};
const journal = createCallJournal({
  redis: undefined as unknown as Redis,
  sealer: sealerFromConfig({ ISLET_SEAL_KEYS: saved.sealKeys }),
});
const payloadOf = (message: string) => message.slice(message.indexOf(' ', message.indexOf(' ') + 1) + 1);
const read = (payload: string) => {
  const [, journalFlat] = JSON.parse(payload) as [unknown, unknown];
  return journal.callsOfPushed(journalFlat);
};
const both = saved.kept[calls];
if (!both) throw new Error(`no messages for ${calls} calls`);
const [a, b] = [read(payloadOf(both.end2)), read(payloadOf(both.end3))];
if (JSON.stringify(a) !== JSON.stringify(b) || a.length !== Number(calls))
  throw new Error('end2 and end3 read differently');
const payload = payloadOf(both[tag as 'end2' | 'end3']);
let kept = 0;
for (let i = 0; i < Number(nText); i++) kept += read(payload).length;
console.log(`${calls} calls, ${tag}: ${nText} reads, ${kept} views`);
