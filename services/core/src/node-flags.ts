/**
 * The Node/V8 flags the gateway and the runner run with, wherever they are launched: the images'
 * entry points (`docker/*.Dockerfile`: `node <flags> services/<kind>/src/main.ts`, checked against
 * this list by `test/docker/dockerfiles.test.ts`; the chart's Deployments and the operator's
 * runner pods run those entry points unchanged) and the local stack (`@islet/devstack`: `npm
 * start`, the tests, the benches). On the command line, not in `NODE_OPTIONS`: nothing a process
 * starts inherits them.
 *
 * The runner's `--max-semi-space-size=16` (MB): under load V8 grew the runner's young generation
 * to its default cap here, 64 MB a half (128 MB in all; its allocation, ~250 KB a run, mostly dies
 * young), and a young generation that large is not kept resident: JS allocating into it met fresh
 * pages, 14–20 first-touch faults a run at 16 clients (10–15 µs each on this PVM guest), three
 * quarters of them in generated code. Held at 16 MB a half its pages stay in use: 5–9 faults a run,
 * and up to 96 MB less young generation (round 31, `proc-faults` in test/bench/README.md). The
 * runner makes no isolate of its own (programs run in the sandbox hosts), so no program's heap is
 * sized by it. The gateway's young generation settles at 16 MB a half under load by itself; held there, a
 * sequential client's runs met 1.2 faults a run on it instead of 3.0–3.9 (after a load drop V8
 * shrank and grew it again).
 */
export const SERVICE_NODE_FLAGS: Readonly<Record<'gateway' | 'runner', readonly string[]>> = {
  gateway: ['--max-semi-space-size=16'],
  runner: ['--max-semi-space-size=16'],
};
