/**
 * The cluster's children's stderr lines (`[gateway-0] …`, `[runner-0] …`, as `startCluster({ verbose })`
 * prints them), taken from this process's stderr before they are printed: each line of a gateway or a
 * runner goes to `onLine` (its V8 traces: `--trace-gc-nvp` and others), every other line is printed as
 * before. For young-gen.ts and gw-memory.ts.
 */
export type Child = 'gateway' | 'runner';

export function takeChildLines(onLine: (who: Child, line: string) => void): void {
  const write = process.stderr.write.bind(process.stderr);
  let pending = '';
  process.stderr.write = ((chunk: string | Uint8Array) => {
    pending += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    let nl = pending.indexOf('\n');
    while (nl >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      nl = pending.indexOf('\n');
      const who = /^\[(gateway|runner)-0\]/.exec(line)?.[1] as Child | undefined;
      if (who) onLine(who, line);
      else write(`${line}\n`);
    }
    return true;
    // biome-ignore lint/suspicious/noExplicitAny: stderr's write overloads
  }) as any;
}

/** A `--trace-gc-nvp` line's field (`name=value`), NaN when absent. */
export function nvpField(line: string, name: string): number {
  return Number(new RegExp(`[ ]${name}=([\\d.]+)`).exec(line)?.[1] ?? Number.NaN);
}
