/**
 * The Node/V8 flags the gateway and the runner run with, wherever they are launched: the images'
 * entry points (`docker/*.Dockerfile`: `node <flags> services/<kind>/src/main.ts`, checked against
 * this list by `test/docker/dockerfiles.test.ts`; the chart's Deployments and the operator's
 * runner pods run those entry points unchanged) and the local stack (`@islet/devstack`: `npm
 * start`, the tests, the benches). On the command line, not in `NODE_OPTIONS`: nothing a process
 * starts inherits them.
 *
 * `--max-semi-space-size=16` (MB) for both. Under load V8 grew the runner's young generation to
 * its default cap here, 64 MB a half (128 MB in all; the runner allocates ~250 KB a run, most of it
 * dying young), and a young generation that large is not kept resident: JS allocating into it met
 * fresh pages, 14–21 first-touch faults a run at 16 clients (10–15 µs each on this PVM guest),
 * three quarters of them with generated code as the leaf. Held at 16 MB a half: 1–7 faults a run.
 * The gateway's, held there too: a sequential client's runs met 1.2 faults a run on it instead of
 * 3.0–9.3 (after a load drop V8 shrank it and grew it back into fresh pages). Resident memory under
 * the bench fell with it: gateway 259–266 → 186–193 MB, runner 202–253 → 167–195 MB (round 31,
 * `proc-faults` in test/bench/README.md). The runner makes no isolate of its own (programs run in
 * the sandbox hosts, which size their own), so no program's heap is sized by it.
 */
export const SERVICE_NODE_FLAGS: Readonly<Record<'gateway' | 'runner', readonly string[]>> = {
  gateway: ['--max-semi-space-size=16'],
  runner: ['--max-semi-space-size=16'],
};
