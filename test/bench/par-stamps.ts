/**
 * A parallel-call batch's steps in the gateway on one clock (round 41, `par-hundred`). Bench aid
 * only: the stamps are put in by `test/bench/par-stamps.patch`:
 *
 *   git apply test/bench/par-stamps.patch
 *   WARM=40 RUNS=30 node test/bench/par-cpu.ts        (or any bench of parallel-call runs)
 *   node test/bench/par-stamps.ts /tmp/par-stamps-<gateway pid>.txt [last N lines, default 30]
 *   git apply -R test/bench/par-stamps.patch
 *
 * In the gateway, `__ps('batch-in')` (the call-batch route, after its body is read) opens a chain;
 * each stamp after it records its µs since then (a label met several times keeps its first, its
 * last and its count); `__ps('batch-end')` (after the answer's `end`) appends the chain as one line
 * of `label@µs` or `label@first..last×count` to `${PAR_STAMPS_OUT ?? '/tmp/par-stamps'}-<pid>.txt`.
 * Stamps: `serve` (each call's `serve`), `claim-build` (each claim's fields made), `claim-send` /
 * `claim-sent` (the claims' script call: before it, after its synchronous part, the socket write),
 * `prepare-all` / `prepared` (the App requests made while the claims are in Redis), `claim-reply`,
 * `app-send` / `app-back` (each App request handed to undici, each answer read), `complete-send` /
 * `complete-reply` (each outcome group's script call), `answer-write` (each NDJSON write to the
 * runner). Run as a script, it prints the phases' p50 / p25 / p75 over a stamps file's last lines.
 */
import { appendFileSync, readFileSync } from 'node:fs';

let t0 = -1;
const seen = new Map<string, { first: number; last: number; n: number }>();

export function ps(label: string): void {
  const t = performance.now();
  if (label === 'batch-in') {
    t0 = t;
    seen.clear();
    return;
  }
  if (t0 < 0) return;
  const us = (t - t0) * 1e3;
  const s = seen.get(label);
  if (s) {
    s.last = us;
    s.n++;
  } else seen.set(label, { first: us, last: us, n: 1 });
  if (label !== 'batch-end') return;
  t0 = -1;
  const parts = [...seen].map(([l, v]) =>
    v.n === 1 ? `${l}@${v.first.toFixed(0)}` : `${l}@${v.first.toFixed(0)}..${v.last.toFixed(0)}×${v.n}`,
  );
  appendFileSync(
    `${process.env.PAR_STAMPS_OUT ?? '/tmp/par-stamps'}-${process.pid}.txt`,
    `${parts.join(' ')}\n`,
  );
}
(globalThis as { __ps?: (label: string) => void }).__ps = ps;

type Span = { first: number; last: number; n: number };

function summarize(file: string, last: number): void {
  const rows = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .slice(-last)
    .map((line) => {
      const d = new Map<string, Span>();
      for (const tok of line.split(' ')) {
        const [label, value] = tok.split('@') as [string, string];
        const m = /^(\d+)(?:\.\.(\d+)×(\d+))?$/.exec(value);
        if (!m) continue;
        const first = Number(m[1]);
        d.set(label, { first, last: m[2] ? Number(m[2]) : first, n: m[3] ? Number(m[3]) : 1 });
      }
      return d;
    });
  const at = (d: Map<string, Span>, label: string, end: 'first' | 'last' | 'n'): number =>
    d.get(label)?.[end] ?? Number.NaN;
  const phases: [string, (d: Map<string, Span>) => number][] = [
    ['claims built (the last claim-build)', (d) => at(d, 'claim-build', 'last')],
    [
      "the claims' script call, its synchronous part",
      (d) => at(d, 'claim-sent', 'first') - at(d, 'claim-send', 'first'),
    ],
    ['100 App requests made (prepare)', (d) => at(d, 'prepared', 'first') - at(d, 'prepare-all', 'first')],
    ["claims' write → reply read", (d) => at(d, 'claim-reply', 'first') - at(d, 'claim-send', 'first')],
    ['App requests handed to undici', (d) => at(d, 'app-send', 'last') - at(d, 'app-send', 'first')],
    ['first request handed → first answer', (d) => at(d, 'app-back', 'first') - at(d, 'app-send', 'first')],
    ['first answer → last answer', (d) => at(d, 'app-back', 'last') - at(d, 'app-back', 'first')],
    [
      'last answer → last outcome group sent',
      (d) => at(d, 'complete-send', 'last') - at(d, 'app-back', 'last'),
    ],
    [
      'last outcome group sent → its reply read',
      (d) => at(d, 'complete-reply', 'last') - at(d, 'complete-send', 'last'),
    ],
    ['last group reply → batch end', (d) => at(d, 'batch-end', 'first') - at(d, 'complete-reply', 'last')],
    ['batch in → batch end', (d) => at(d, 'batch-end', 'first')],
  ];
  const q = (values: number[], p: number) => (values[Math.floor(values.length * p)] as number) / 1e3;
  console.log(`${rows.length} batches of ${file}; ms: p50 (p25, p75)`);
  for (const [name, f] of phases) {
    const v = rows
      .map(f)
      .filter((x) => !Number.isNaN(x))
      .sort((x, y) => x - y);
    if (v.length === 0) continue;
    console.log(
      `${name.padEnd(48)} ${q(v, 0.5).toFixed(2)} (${q(v, 0.25).toFixed(2)}, ${q(v, 0.75).toFixed(2)})`,
    );
  }
  const counts = (label: string) =>
    rows
      .map((d) => at(d, label, 'n'))
      .sort((x, y) => x - y)
      .join(' ');
  console.log(`outcome groups (script calls) a batch: ${counts('complete-send')}`);
  console.log(`answer writes to the runner a batch: ${counts('answer-write')}`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, ''))) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node test/bench/par-stamps.ts <stamps file> [last N]');
  summarize(file, Number(process.argv[3] ?? 30));
}
