/**
 * `ADDON=<isolated_vm.node> node --no-node-snapshot test/bench/ivm-addon-outcomes.ts`: the same
 * programs through two engines, one whose sandbox hosts open the installed isolated-vm addon and one
 * whose hosts open ADDON (a patched build: test/bench/ivm-lazy-context.patch), with their outcomes
 * compared field by field (status, value, failure kind and message, logs, calls). Covers the paths
 * the patch touches: errors copied out of the isolate (a throw, a syntax error, a rejected await), a
 * deadline, the memory limit, binding calls answered on the host's thread and on isolated-vm's
 * (`apply`, whose wrapper is compiled in the default context), and what a program can see (`this`,
 * `Function('…')` refused). HOST_ENV: the patched hosts' environment (`A=1 B=2`). Prints one line a
 * program and exits 1 on any difference. Round 46 (`host-cpu`, test/bench/README.md).
 */
import { createEngine, type RunOutcome } from '@islet/engine';
import type { BindingCall, BindingOutcome } from '@islet/protocol';

const ADDON = process.env.ADDON;
/** SCRIPT: the patched hosts' script (a copy of dist/host with its harness installed another way). */
const SCRIPT = process.env.SCRIPT;
if (!ADDON) throw new Error('ADDON=<path of the patched isolated_vm.node> is required');
const HOST_ENV: Record<string, string> = Object.fromEntries(
  (process.env.HOST_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);

const PROGRAMS: { name: string; code: string; memoryMb?: number; timeoutMs?: number }[] = [
  { name: 'value', code: 'return [1, 2, 3].map((n) => n * 2);' },
  { name: 'log', code: 'console.log("a", 1); console.error("b"); return 1;' },
  { name: 'throw', code: 'throw new TypeError("bad " + 1);' },
  { name: 'throw non-error', code: 'throw { x: 1 };' },
  { name: 'syntax error', code: 'return )(;' },
  { name: 'rejected await', code: 'await Promise.reject(new RangeError("no")); return 1;' },
  { name: 'eval refused', code: 'return Function("return 1")();' },
  { name: 'globals', code: 'return Object.getOwnPropertyNames(globalThis).sort().join(",");' },
  { name: 'deadline', code: 'for (;;) {}', timeoutMs: 200 },
  { name: 'memory', code: 'const a = []; for (;;) a.push(new Array(1e5).fill(1));', memoryMb: 16 },
  {
    name: 'calls',
    code: 'let n = 0; for (let i = 0; i < 3; i++) n += (await apps.t.add({ i })).n; const all = await Promise.all([apps.t.add({ i: 9 }), apps.t.add({ i: 8 })]); return n + all[0].n + all[1].n;',
  },
  {
    name: 'call error',
    code: 'try { await apps.t.fail({}); } catch (e) { return String(e.message); }',
  },
  { name: 'leftover work', code: 'const spin = async () => { for (;;) await 0; }; spin(); return 7;' },
];

function engineWith(addon: string | undefined) {
  return createEngine({
    maxIdlePerPartition: 1,
    hostEnv: addon ? HOST_ENV : {},
    wrapCommand: (command, args) => ({
      command,
      args: args.map((a, i) =>
        addon && SCRIPT && /\/host\.[jt]s$/.test(a)
          ? SCRIPT
          : addon && args[i - 1] === '--isolated-vm-addon'
            ? addon
            : a,
      ),
    }),
  });
}

/** What must be the same: the outcome without its times, pids and CPU. */
function shape(o: RunOutcome): unknown {
  return {
    status: o.status,
    valueJson: o.valueJson,
    failure: o.failure ? { kind: o.failure.kind, message: o.failure.message } : undefined,
    logs: o.logs.map((l) => [l.level, l.text]),
    calls: o.calls.map((c) => [c.binding, c.argsJson, c.outcome, c.dropped]),
  };
}

async function main(): Promise<void> {
  const stock = engineWith(undefined);
  const patched = engineWith(ADDON);
  let differ = 0;
  try {
    for (const p of PROGRAMS) {
      const opts = {
        randomSeed: 'outcomes',
        clockMs: 0,
        bindings: ['t.add', 't.fail'],
        limits: { timeoutMs: p.timeoutMs ?? 5000, ...(p.memoryMb ? { memoryMb: p.memoryMb } : {}) },
        onCall: async (call: BindingCall): Promise<BindingOutcome> =>
          call.binding === 't.fail'
            ? { type: 'error', name: 'AppCallFailed', message: 'failed on purpose' }
            : { type: 'result', valueJson: JSON.stringify({ n: JSON.parse(call.argsJson).i + 1 }) },
      };
      const a = JSON.stringify(shape(await stock.execute(p.code, opts)));
      const b = JSON.stringify(shape(await patched.execute(p.code, opts)));
      const same = a === b;
      if (!same) differ++;
      console.log(`${same ? 'same' : 'DIFFER'}  ${p.name}: ${a.slice(0, 160)}`);
      if (!same) console.log(`        patched: ${b.slice(0, 160)}`);
    }
  } finally {
    await stock.close();
    await patched.close();
  }
  console.log(`${PROGRAMS.length - differ} of ${PROGRAMS.length} the same`);
  if (differ) process.exit(1);
}

await main();
