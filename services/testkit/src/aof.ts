/**
 * Reading a real Redis's append-only file, for tests and benches that check what a script
 * propagates: the newest incremental file of a multi-part AOF (Redis 7) and its commands.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest `*.incr.aof` in an AOF directory (`<dir>/<appenddirname>`). */
export function newestIncrAof(aofDir: string): string {
  const file = readdirSync(aofDir)
    .filter((f) => f.endsWith('.incr.aof'))
    .map((f) => join(aofDir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (!file) throw new Error(`no incremental AOF in ${aofDir}`);
  return file;
}

/** The commands in AOF bytes (RESP arrays of bulk strings), each with the bytes it takes. */
export function* aofCommands(buf: Buffer): Generator<{ args: string[]; bytes: number }> {
  let i = 0;
  const line = () => {
    const end = buf.indexOf('\r\n', i);
    const s = buf.toString('latin1', i, end);
    i = end + 2;
    return s;
  };
  while (i < buf.length) {
    const start = i;
    const head = line();
    if (!head.startsWith('*')) throw new Error(`AOF: '${head}' at ${start}`);
    const n = Number(head.slice(1));
    const args: string[] = [];
    for (let k = 0; k < n; k++) {
      const len = Number(line().slice(1));
      args.push(buf.toString('latin1', i, i + len));
      i += len + 2;
    }
    yield { args, bytes: i - start };
  }
}
