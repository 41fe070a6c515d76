/**
 * `SHAPES="79 30 13" N=20000 node test/bench/resp-time.ts`: µs an encoding of each real command
 * shape (resp-lists.json, see resp-count.ts) by the `OneCopyCommand` of this tree's services/ (for
 * test/bench/ab.sh: a0565cd2's or the head's), best of 5 rounds of `N` after 2 warm-up rounds.
 */
import { readFileSync } from 'node:fs';
import { OneCopyCommand } from '../../services/core/src/lua-script.ts';

const N = Number(process.env.N ?? 20000);
const lists = (
  JSON.parse(readFileSync(new URL('./resp-lists.json', import.meta.url), 'utf8')) as {
    name: string;
    args: (string | { b: string })[];
  }[]
).map(({ name, args }) => ({
  name,
  args: args.map((a) => (typeof a === 'string' ? a : Buffer.from(a.b, 'base64'))),
}));
const out: string[] = [];
for (const shape of (process.env.SHAPES ?? '79 30 13').split(' ').map(Number)) {
  const list = lists.find(({ name, args }) => name === 'evalsha' && args.length === shape);
  if (!list) throw new Error(`no list of ${shape} arguments`);
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 7; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i++) new OneCopyCommand(list.name, list.args.slice()).toWritable({});
    const us = Number(process.hrtime.bigint() - start) / N / 1000;
    if (round >= 2) best = Math.min(best, us);
  }
  out.push(`${shape}: ${best.toFixed(2)} µs`);
}
console.log(`encoding, best of 5: ${out.join(', ')}`);
