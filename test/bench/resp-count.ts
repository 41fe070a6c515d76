/**
 * `FORM=base|head SHAPE=<args count>|all N=<n> node --single-threaded test/bench/resp-count.ts`:
 * encodes real commands (resp-lists.json: one of each shape resp-capture.ts recorded from a bench
 * cluster — a submit's 79 arguments with BullMQ's two packed options, a binding call's claim (30)
 * and outcome (13, 18), a run's end (41), …) `N` times with `OneCopyCommand.toWritable`, the
 * head's or a0565cd2's (resp-count.sh writes it to resp-base.generated.ts). Each encoding's bytes
 * are compared with ioredis's once first. Counted by callgrind (resp-count.sh).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'ioredis';

type Arg = string | Buffer;
const FORM = process.env.FORM ?? 'head';
const N = Number(process.env.N ?? 1000);
const SHAPE = process.env.SHAPE ?? 'all';
const module = await import(
  FORM === 'base' ? './resp-base.generated.ts' : '../../services/core/src/lua-script.ts'
);
const OneCopy = module.OneCopyCommand as new (name: string, args: Arg[]) => { toWritable(s: object): Buffer };

const lists = (
  JSON.parse(readFileSync(new URL('./resp-lists.json', import.meta.url), 'utf8')) as {
    name: string;
    args: (string | { b: string })[];
  }[]
)
  .map(({ name, args }) => ({
    name,
    args: args.map((a) => (typeof a === 'string' ? a : Buffer.from(a.b, 'base64'))) as Arg[],
  }))
  .filter(({ args }) => SHAPE === 'all' || args.length === Number(SHAPE));
if (lists.length === 0) throw new Error(`no list of ${SHAPE} arguments`);
for (const { name, args } of lists) {
  const ours = new OneCopy(name, args.slice()).toWritable({});
  const theirs = new Command(name, args.slice()).toWritable({}) as Buffer | string;
  if (!ours.equals(Buffer.from(theirs))) throw new Error(`${name} ${args.length}: bytes differ`);
}
let bytes = 0;
for (let i = 0; i < N; i++) {
  for (const { name, args } of lists) bytes += new OneCopy(name, args.slice()).toWritable({}).length;
}
console.log(`${FORM} shape ${SHAPE}: ${lists.length} commands x ${N}, ${bytes} bytes`);
