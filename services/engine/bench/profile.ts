/**
 * `node services/engine/bench/profile.ts [runs]`: trivial runs through the engine with the sandbox
 * host under `--cpu-prof` (profiles in PROFILE_DIR, default /tmp/islet-engine-prof); run this file
 * itself with `--cpu-prof` too to profile the engine side. Prints the heaviest functions (self time)
 * of each host profile.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';

const RUNS = Number(process.argv[2] ?? 500);
const DIR = process.env.PROFILE_DIR ?? '/tmp/islet-engine-prof';
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
mkdirSync(DIR, { recursive: true });

const engine = createEngine({
  maxRunsPerProcess: RUNS + 10,
  // Through a shell: the engine SIGKILLs the shell at close, the host sees its stdin end and exits
  // cleanly, writing its profile.
  wrapCommand: (command, args) => ({
    command: '/bin/sh',
    args: [
      '-c',
      '"$@"; true',
      'sh',
      command,
      '--cpu-prof',
      `--cpu-prof-dir=${DIR}`,
      '--cpu-prof-interval=200',
      ...args,
    ],
  }),
});
const t0 = performance.now();
for (let i = 0; i < RUNS; i++) {
  const out = await engine.execute(PROGRAM);
  if (out.valueJson !== '12') throw new Error(JSON.stringify(out.failure));
}
console.log(`${RUNS} runs, ${((performance.now() - t0) / RUNS).toFixed(2)} ms/run`);
// A graceful end (stdin closed) so the host writes its profile; SIGKILL would lose it.
await engine.close();
await new Promise((r) => setTimeout(r, 2000));

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
for (const f of readdirSync(DIR).filter((f) => f.endsWith('.cpuprofile'))) {
  const p = JSON.parse(readFileSync(join(DIR, f), 'utf8')) as {
    nodes: Node[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const n = byId.get(id)!;
    const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${f}: ${(total / 1000).toFixed(0)} ms sampled`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${(v / 1000).toFixed(1).padStart(8)} ms  ${k}`);
}
