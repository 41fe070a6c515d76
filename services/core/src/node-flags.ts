/**
 * The Node/V8 flags the gateway and the runner run with, wherever they are launched: the images'
 * entry points (`docker/*.Dockerfile`: `node <flags> services/<kind>/src/main.ts`, checked against
 * this list by `test/docker/dockerfiles.test.ts`; the chart's Deployments and the operator's
 * runner pods run those entry points unchanged) and the local stack (`@islet/devstack`: `npm
 * start`, the tests, the benches). On the command line, not in `NODE_OPTIONS`: nothing a process
 * starts inherits them.
 *
 * A young generation of 4 MB a semi-space for both, held there (`--min-semi-space-size=4
 * --max-semi-space-size=4`; V8 reports `new_space` as 8 MiB, both halves). A scavenge's pause
 * follows what it copies, and at 16 MB what it copied was ~1 MB: one scavenge every ~150–210
 * sequential runs in each process, 4.5–8 ms each at load 7–10 — 1–1.5 % of a one-client run's
 * latencies, its p99 exactly. At 4 MB one every ~37–48 runs at ~1.5 ms p50 (the pauses summed a run
 * +0.04 ms over both; round 47, `tail-gc` in test/bench/README.md). Held (min = max): V8 neither
 * grows it page by page under load nor shrinks it after, so its pages stay in use, not re-faulted
 * (round 31, `proc-faults`: 64 MB a half under load, 14–21 first-touch faults a run; 16 held it, and
 * 4 read the fewest faults there); resident memory falls with it. The runner makes no isolate of its
 * own (programs run in the sandbox hosts, which size their own), so no program's heap is sized by it.
 */
export const SERVICE_NODE_FLAGS: Readonly<Record<'gateway' | 'runner', readonly string[]>> = {
  gateway: ['--min-semi-space-size=4', '--max-semi-space-size=4'],
  runner: ['--min-semi-space-size=4', '--max-semi-space-size=4'],
};
