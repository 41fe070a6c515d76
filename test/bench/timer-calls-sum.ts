/**
 * Sums what `timer-calls.ts` wrote for the gateway: `node test/bench/timer-calls-sum.ts <dir> <runs>
 * [pattern]`: per kind, calls whose stack holds `pattern` (default: the gateway's own sources),
 * divided by `runs` (the runs the gateway served, warm-up included).
 */
import { readdirSync, readFileSync } from 'node:fs';

const [dir, runsText, pattern = 'services/gateway/src/'] = process.argv.slice(2);
if (!dir || !runsText) throw new Error('usage: timer-calls-sum.ts <dir> <runs> [pattern]');
const runs = Number(runsText);
for (const f of readdirSync(dir).filter((n) => n.startsWith('timers-'))) {
  const text = readFileSync(`${dir}/${f}`, 'utf8');
  const [command = '', ...rest] = text.split('\n');
  if (!command.includes('gateway/src/main.ts')) continue;
  const byKind = new Map<string, number>();
  // Entries: `<count> <kind>` then the stack's lines (each starting with spaces).
  let count = 0;
  let kind = '';
  let stack = '';
  const flush = () => {
    if (kind && stack.includes(pattern)) byKind.set(kind, (byKind.get(kind) ?? 0) + count);
  };
  for (const line of rest) {
    const m = /^(\d+) (\w+)$/.exec(line);
    if (m) {
      flush();
      count = Number(m[1]);
      kind = m[2] ?? '';
      stack = '';
    } else stack += `${line}\n`;
  }
  flush();
  const parts = [...byKind].map(([k, c]) => `${k} ${c} (${(c / runs).toFixed(3)} a run)`);
  console.log(`gateway timer calls from ${pattern}: ${parts.join(', ') || 'none'}`);
}
