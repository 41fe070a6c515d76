/**
 * What seq-cpu.ts and par-cpu.ts read of a cluster process: its main thread's CPU, wake-ups and
 * page faults from /proc, and `perf record` of that thread over the measured runs, printed as
 * on-CPU µs a unit (run or call) by innermost JS frame (profile-summary.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { summarizePerfScript } from './profile-summary.ts';

/** Samples a second `perf record` takes of the thread. */
export const PERF_HZ = 4999;

/**
 * The Node flag a recorded process needs: `jit` (PERF_JIT=1), V8's jitdump (`--perf-prof`, `perf
 * inject --jit`) names JIT code by when it lived, so code collected and its address reused is not
 * charged to another function (`--perf-basic-prof`'s map is one name an address for the process's
 * life).
 */
export const perfNodeFlag = (jit: boolean): string =>
  jit ? '--perf-prof --interpreted-frames-native-stack' : '--perf-basic-prof-only-functions';

/**
 * `pid`'s main thread: time on a CPU (`schedstat`, µs: not time waiting for one, so it reads at any
 * load), the whole process's CPU (`stat`, 10 ms ticks: GC and compiler threads too, in µs), the
 * main thread's sleeps (voluntary context switches: each a wake-up, the scheduler's work part of
 * `main`) and the process's minor page faults (each a trip through the kernel, ~µs on this VM).
 * `waited`: the main thread's time runnable but waiting for a CPU (`schedstat`'s second field, µs;
 * round 41 `par-hundred`): on a shared 2-core box, the part of a run's wall time that is the load's.
 */
export function threadCpu(pid: number | undefined) {
  if (pid === undefined) return { main: 0, all: 0, wakes: 0, faults: 0, waited: 0 };
  const sched = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ');
  const main = Number(sched[0]);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  const wakes = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return {
    main: main / 1000,
    all: (Number(f[11]) + Number(f[12])) * 10_000,
    wakes,
    faults: Number(f[7]),
    waited: Number(sched[1]) / 1000,
  };
}

/**
 * `perf record -e cpu-clock` of `pid`'s main thread into `<dir>/<who>.perf`, started once perf is
 * attached. `stop(units, top)` ends it and answers the `top` frames' on-CPU µs a unit; with `jit`
 * the jitdumps of `pids` (written to this process's working directory) are removed after.
 */
export async function recordThread(opts: {
  pid: number;
  who: string;
  dir: string;
  jit: boolean;
  pids: (number | undefined)[];
}): Promise<{ stop(units: number, top: number): Promise<string> }> {
  let data = join(opts.dir, `${opts.who}.perf`);
  const perf = spawn(
    'perf',
    [
      'record',
      '-q',
      ...(opts.jit ? ['-k', 'mono'] : []),
      '-g',
      '-e',
      'cpu-clock',
      '-F',
      String(PERF_HZ),
      '-t',
      String(opts.pid),
      '-o',
      data,
    ],
    { stdio: 'ignore' },
  );
  await new Promise((r) => setTimeout(r, 500));
  return {
    async stop(units, top) {
      const exited = new Promise((r) => (perf.exitCode === null ? perf.on('exit', r) : r(null)));
      perf.kill('SIGINT');
      await exited;
      if (opts.jit) {
        execFileSync('perf', ['inject', '--jit', '-i', data, '-o', `${data}.jit`], { stdio: 'ignore' });
        data = `${data}.jit`;
      }
      const script = execFileSync('perf', ['script', '-i', data], {
        encoding: 'utf8',
        maxBuffer: 1 << 30,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      if (opts.jit)
        for (const f of readdirSync('.'))
          if (opts.pids.some((pid) => f === `jit-${pid}.dump` || f.startsWith(`jitted-${pid}-`)))
            rmSync(f, { force: true });
      return summarizePerfScript(script, units, PERF_HZ, top);
    },
  };
}
