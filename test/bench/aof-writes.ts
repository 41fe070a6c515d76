/**
 * The AOF's bytes read back as the scripts' writes (round 35 `pickup`, moved out of aof-bytes.ts in
 * round 37 `call-gw2` for gateway-calls-cpu.ts' `AOF=1`): RESP arrays grouped into MULTI … EXEC
 * blocks, and the 4 KB blocks of the file each write crosses.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';

/** The server's incremental AOF file (the largest-numbered `.incr.aof`, Redis 7's multi-part AOF). */
export async function aofFileOf(redis: Redis): Promise<string> {
  const dir = ((await redis.config('GET', 'dir')) as string[])[1] as string;
  const sub = ((await redis.config('GET', 'appenddirname')) as string[])[1] ?? '';
  const aofDir = join(dir, sub);
  const incr = readdirSync(aofDir)
    .filter((f) => f.endsWith('.incr.aof'))
    .sort()
    .at(-1) as string;
  return join(aofDir, incr);
}

export interface Cmd {
  label: string;
  bytes: number;
}

export interface Block {
  /** Offset in the bytes read (the file's offset less where the reading began). */
  at: number;
  bytes: number;
  cmds: Cmd[];
}

/**
 * The AOF's writes and the 4 KB blocks of the file they cross (round 35 \`pickup\`: an fsync'd
 * write that crosses one costs one more disk request, ~0.1 ms on this VM's disk). A write is a
 * MULTI … EXEC block with the lone commands right behind it (the submit's block and the pop's
 * ZPOPMIN go out in one write: they were made in one event-loop turn). The file's offsets are the
 * page cache's, so a crossing read here is one at the disk. A count: the same on every run of the
 * same bytes, whatever the load.
 */
export function crossings(blocks: Block[], from: number, units: number, unit = 'run'): void {
  const writes: { at: number; bytes: number; kind: string }[] = [];
  for (const b of blocks) {
    const last = writes.at(-1);
    if (last && b.cmds.length === 1 && b.at === last.at + last.bytes && !/^multi/.test(b.cmds[0]!.label))
      last.bytes += b.bytes;
    else writes.push({ at: b.at, bytes: b.bytes, kind: kindOf(b.cmds) });
  }
  const byKind = new Map<string, { n: number; bytes: number; crossed: number; sizes: number[] }>();
  let crossed = 0;
  for (const w of writes) {
    const at = from + w.at;
    const c = Math.floor(at / 4096) !== Math.floor((at + w.bytes - 1) / 4096) ? 1 : 0;
    crossed += c;
    const e = byKind.get(w.kind) ?? { n: 0, bytes: 0, crossed: 0, sizes: [] };
    e.n++;
    e.bytes += w.bytes;
    e.crossed += c;
    e.sizes.push(w.bytes);
    byKind.set(w.kind, e);
  }
  console.log(
    `writes: ${(writes.length / units).toFixed(2)} a ${unit}; 4 KB blocks crossed: ${crossed} in ${units} ${unit}s (${(crossed / units).toFixed(3)} a ${unit})`,
  );
  for (const [k, e] of [...byKind].sort((a, b) => b[1].bytes - a[1].bytes)) {
    console.log(
      `  ${k}: ${e.n} writes of ${(e.bytes / e.n).toFixed(0)} B mean, ${e.crossed} crossing (${((100 * e.crossed) / e.n).toFixed(0)} %)`,
    );
    // The file's offset walks with what a run appends, so a sequential bench's crossings are one
    // walk; over uniform offsets a write of S bytes touches a second block with probability
    // (S - 1) / 4,096 (round 38, `aof-cut`): that rate, and the writes above 8 KB apart (an end
    // carrying its tenant's index fold, 1 end in FOLD_AT / 2).
    const sorted = [...e.sizes].sort((a, b) => a - b);
    const big = sorted.filter((s) => s > 8192);
    const small = sorted.filter((s) => s <= 8192);
    const expect = small.reduce((sum, s) => sum + Math.min(1, (s - 1) / 4096), 0) / (small.length || 1);
    console.log(
      `      p50 ${sorted[Math.floor(sorted.length / 2)]} B; ≤ 8 KB: ${small.length}, uniform-offset crossing ${(100 * expect).toFixed(1)} %` +
        (big.length
          ? `; > 8 KB: ${big.length} (${((100 * big.length) / e.n).toFixed(1)} %), ${(big.reduce((a, b) => a + b, 0) / big.length).toFixed(0)} B mean`
          : ''),
    );
  }
}

/** RESP arrays of bulk strings (the AOF's form), grouped into MULTI … EXEC blocks (a lone command: its own block). */
export function parse(buf: Buffer): Block[] {
  const out: Block[] = [];
  let pos = 0;
  let open: Block | undefined;
  const line = () => {
    const end = buf.indexOf('\r\n', pos);
    const s = buf.toString('latin1', pos, end);
    pos = end + 2;
    return s;
  };
  while (pos < buf.length) {
    const start = pos;
    const head = line();
    if (!head.startsWith('*')) continue;
    const args: string[] = [];
    for (let i = Number(head.slice(1)); i > 0; i--) {
      const len = Number(line().slice(1));
      args.push(buf.toString('latin1', pos, pos + Math.min(len, 80)));
      pos += len + 2;
    }
    const name = (args[0] ?? '').toLowerCase();
    const key = (args[1] ?? '').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/\d{6,}/g, '<n>');
    const cmd = { label: `${name} ${key}`, bytes: pos - start };
    if (name === 'multi') open = { at: start, bytes: cmd.bytes, cmds: [] };
    else if (name === 'exec' && open) {
      open.bytes += cmd.bytes;
      out.push(open);
      open = undefined;
    } else if (open) {
      open.bytes += cmd.bytes;
      open.cmds.push(cmd);
    } else if (name !== 'select') out.push({ at: start, bytes: cmd.bytes, cmds: [cmd] });
  }
  return out;
}

/** A block named by its commands: the submit holds the job's HMSET and the record's create. */
export function kindOf(cmds: Cmd[]): string {
  const names = cmds.map((c) => c.label);
  if (names.some((n) => /^hmset /.test(n)) && names.some((n) => /^hset islet:run:/.test(n)))
    return 'the submit (add, hand-off, start)';
  if (names.some((n) => /completed/.test(n))) return 'the end (with the completion)';
  return names.slice(0, 3).join(', ');
}

/** The writes grouped by kind (`kindOf`): how many, their bytes, and each command's bytes in them. */
export function byKindOf(
  blocks: Block[],
): Map<string, { n: number; bytes: number; cmds: Map<string, number> }> {
  const byKind = new Map<string, { n: number; bytes: number; cmds: Map<string, number> }>();
  for (const b of blocks) {
    const k = kindOf(b.cmds);
    const e = byKind.get(k) ?? { n: 0, bytes: 0, cmds: new Map() };
    e.n++;
    e.bytes += b.bytes;
    for (const c of b.cmds) e.cmds.set(c.label, (e.cmds.get(c.label) ?? 0) + c.bytes);
    byKind.set(k, e);
  }
  return byKind;
}
