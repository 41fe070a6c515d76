/**
 * `node test/bench/packed-options-parts.ts`: a submit's packing of its run job's options
 * (run-add-store.ts `packOptions`), `N` times (default 20000) after `WARM` (default 20000), the
 * options built as `enqueueRun` builds them (`runJobOptions` spread, format 2: no jobId over it),
 * each with its own job id. `PACKER=new`: this tree's `runOptionsPacker` (packed-options.ts, round
 * 45 `terms-on`); `PACKER=old`: 9ec25e04's `packedOnce` from `OLD_DIR` (its packed-options.ts,
 * `git show 9ec25e04:services/gateway/src/packed-options.ts`; it imports nothing); `NEW_DIR`: this
 * tree's file from a copy (one under the tree, so `@islet/runs` resolves). Counted, not
 * timed: `packed-options-parts.sh` runs it under callgrind with N=0 and N=<n>.
 */
import { runJobOptions } from '@islet/runs';
import { Packr } from 'msgpackr';

const N = Number(process.env.N ?? 20000);
const WARM = Number(process.env.WARM ?? 20000);
const which = process.env.PACKER ?? 'new';

const packr = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
const pack = (opts: object) => {
  const { jobId: _id, ...stored } = opts as { jobId?: string };
  return packr.pack(Object.assign({ attempts: 0 }, stored));
};
type Packer = ((opts: object) => Buffer) & { packed: number };
const make =
  which === 'old'
    ? (
        (await import(`${process.env.OLD_DIR}/packed-options.ts`)) as {
          packedOnce: (p: typeof pack) => Packer;
        }
      ).packedOnce
    : (
        (await import(
          `${process.env.NEW_DIR ?? '../../services/gateway/src'}/packed-options.ts`
        )) as unknown as {
          runOptionsPacker: (p: typeof pack) => Packer;
        }
      ).runOptionsPacker;
const packer = make(pack);

let sink = 0;
const ids = Array.from({ length: 64 }, (_, i) => `run-${i.toString(36)}-0123456789abcdef`);
const once = (i: number) => {
  const opts = { ...runJobOptions(ids[i & 63] as string, 3) };
  sink += packer(opts).length;
};
for (let i = 0; i < WARM; i++) once(i);
// Both packers' calls build the same options: the difference between them is the packers' own.
for (let i = 0; i < N; i++) once(i);
if (packer.packed !== 1) throw new Error(`packed ${packer.packed} times`);
if (!process.env.QUIET) console.log(which, sink);
