/**
 * EEVDF's per-task slice request (Linux ≥ 6.12) set from a bench probe: `sched_setattr(tid,
 * SCHED_OTHER, sched_runtime = ns)`, the thread's niceness kept; 0 puts the kernel's default back
 * (`se.slice` = the base slice). Node has no call for it: `test/bench/sched-slice.c` built by gcc
 * when gcc exists (this box), else python3's ctypes (CI has no gcc). `sliceOf` reads `se.slice`
 * back from `/proc/<tid>/sched`. Round 46 (`host-slice`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TOOL = process.env.SLICE_TOOL ?? '/tmp/sched-slice';
const SOURCE = fileURLToPath(new URL('./sched-slice.c', import.meta.url));

// The same struct as sched-slice.c (SCHED_ATTR_SIZE_VER1, 56 bytes); 314 = SYS_sched_setattr on x86_64.
const PY = `
import ctypes, os, sys
class A(ctypes.Structure):
  _fields_ = [('size', ctypes.c_uint32), ('policy', ctypes.c_uint32), ('flags', ctypes.c_uint64),
              ('nice', ctypes.c_int32), ('prio', ctypes.c_uint32), ('runtime', ctypes.c_uint64),
              ('deadline', ctypes.c_uint64), ('period', ctypes.c_uint64), ('umin', ctypes.c_uint32),
              ('umax', ctypes.c_uint32)]
libc = ctypes.CDLL(None, use_errno=True)
bad = 0
for tid in map(int, sys.argv[2:]):
  a = A(); a.size = ctypes.sizeof(A); a.runtime = int(sys.argv[1])
  a.nice = os.getpriority(os.PRIO_PROCESS, tid)
  if libc.syscall(314, tid, ctypes.byref(a), 0) != 0: print(tid, os.strerror(ctypes.get_errno()), file=sys.stderr); bad = 1
sys.exit(bad)
`;

let how: 'tool' | 'python' | undefined;
function tool(): 'tool' | 'python' {
  if (how) return how;
  if (!existsSync(TOOL)) {
    try {
      execFileSync('gcc', ['-O2', '-o', TOOL, SOURCE], { stdio: 'ignore' });
    } catch {}
  }
  how = existsSync(TOOL) ? 'tool' : 'python';
  return how;
}

/** Asks for a `ns` slice for each thread (0: the kernel's default again). Throws if one refused. */
export function setSlice(ns: number, tids: number[]): void {
  if (!tids.length) return;
  const args = [String(ns), ...tids.map(String)];
  if (tool() === 'tool') execFileSync(TOOL, args);
  else execFileSync('python3', ['-c', PY, ...args]);
}

/** A thread's `se.slice`, ns, as the kernel holds it (NaN if unreadable). */
export function sliceOf(tid: number): number {
  try {
    const m = /^se\.slice\s*:\s*(\d+)/m.exec(readFileSync(`/proc/${tid}/sched`, 'utf8'));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A thread's schedstat: [ns on a CPU, ns runnable waiting for one, timeslices]. */
export function schedstatOf(tid: number): [number, number, number] {
  try {
    const [a, b, c] = readFileSync(`/proc/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
    return [a ?? 0, b ?? 0, c ?? 0];
  } catch {
    return [0, 0, 0];
  }
}
