/**
 * A lone binding call's steps, stamped one by one in the gateway and in the runner (round 33,
 * `call-path`; the call route's counterpart of round 31's `gw-steps`). Bench aid only: the stamps
 * are put in by `test/bench/call-steps.patch` (`git apply test/bench/call-steps.patch`, run a bench
 * of sequential calls, read the files, `git apply -R test/bench/call-steps.patch`); nothing in
 * `services/` imports this module otherwise.
 *
 * One chain a process at a time (sequential calls: one call in flight): `open` starts it, each
 * stamp adds the µs since the one before, `close` ends it. Every `CALL_STEPS_EVERY` (default 100)
 * chains the per-step p50 / p25 / mean go to `${CALL_STEPS_OUT ?? '/tmp/call-steps'}-<pid>.txt`.
 * A chain whose steps differ from the first one's (a replay, a batch) is counted apart, not summed.
 */
import { writeFileSync } from 'node:fs';

type Stamp = [string, number];
let cur: Stamp[] | undefined;
const acc = new Map<string, number[]>();
let shape: string | undefined;
let chains = 0;
let otherShape = 0;
const every = Number(process.env.CALL_STEPS_EVERY ?? 100);

function dump(): void {
  const lines = [`${chains} chains of the common shape, ${otherShape} of another; µs from the step before`];
  for (const [label, values] of acc) {
    const s = [...values].sort((x, y) => x - y);
    const mean = s.reduce((x, y) => x + y, 0) / s.length;
    lines.push(
      `${label.padEnd(22)} p50 ${s[s.length >> 1]?.toFixed(1).padStart(8)}  p25 ${s[s.length >> 2]?.toFixed(1).padStart(8)}  mean ${mean.toFixed(1).padStart(8)}`,
    );
  }
  writeFileSync(
    `${process.env.CALL_STEPS_OUT ?? '/tmp/call-steps'}-${process.pid}.txt`,
    `${lines.join('\n')}\n`,
  );
}

/** A stamp: `open` starts a chain, `close` ends it; anything else is a step of an open chain. */
export function cs(label: string): void {
  const t = performance.now();
  if (label === 'open') {
    cur = [[label, t]];
    return;
  }
  if (!cur) return;
  // A step met twice in a chain (the claim's and the outcome's script writes) is named apart.
  let name = label;
  for (let n = 2; cur.some(([l]) => l === name); n++) name = `${label}#${n}`;
  cur.push([name, t]);
  if (label !== 'close') return;
  const chain = cur;
  cur = undefined;
  const labels = chain.map(([l]) => l).join(' ');
  shape ??= labels;
  if (labels !== shape) {
    otherShape++;
    return;
  }
  let prev = chain[0]![1];
  for (const [l, at] of chain.slice(1)) {
    const values = acc.get(l) ?? [];
    values.push((at - prev) * 1000);
    acc.set(l, values);
    prev = at;
  }
  const total = acc.get('TOTAL') ?? [];
  total.push((prev - chain[0]![1]) * 1000);
  acc.set('TOTAL', total);
  if (++chains % every === 0) dump();
}

/** Whether a chain is open (a hook stamps only then). */
export const csOpen = (): boolean => cur !== undefined;

(globalThis as { __cs?: typeof cs }).__cs = cs;
