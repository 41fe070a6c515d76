/**
 * The commands Redis ran from Lua while `fn` ran, every argument, seen by MONITOR. MONITOR's lines
 * come on their own connection, so a reply on `redis` can be read before the lines of the commands
 * that ran before it: a fixed wait after `fn` missed some under load (a 30 ms one failed with 16
 * other test files running). Instead an ECHO of a marker goes after `fn` and the capture ends when
 * MONITOR shows it (bounded at 10 s), as the runner's harness does (runner/test/runner-harness.ts).
 */
import type { Redis } from 'ioredis';

let captures = 0;

export async function luaDuring(redis: Redis, fn: () => Promise<unknown>): Promise<string[][]> {
  const mon = await redis.monitor();
  const seen: string[][] = [];
  const marker = `islet-lua-during-${process.pid}-${++captures}`;
  let markerSeen: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    markerSeen = resolve;
  });
  mon.on('monitor', (_time: string, args: string[], source: string) => {
    if (String(args[0]).toLowerCase() === 'echo' && String(args[1]) === marker) return markerSeen();
    if (source === 'lua') seen.push(args.map(String));
  });
  // Lines in flight when the monitor is disconnected reach ioredis as replies to no command.
  let stopped = false;
  mon.on('error', (err: Error) => {
    if (!stopped) throw err;
  });
  try {
    await fn();
    await redis.echo(marker);
    let bound: NodeJS.Timeout | undefined;
    const gaveUp = await Promise.race([
      reached.then(() => false),
      new Promise<boolean>((r) => {
        bound = setTimeout(() => r(true), 10_000);
      }),
    ]);
    clearTimeout(bound);
    if (gaveUp) throw new Error("MONITOR did not show the capture's end marker within 10 s");
  } finally {
    stopped = true;
    mon.disconnect();
  }
  return seen;
}
