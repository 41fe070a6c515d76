/**
 * `node --no-node-snapshot test/bench/harness-snapshot-idle.ts`: an idle pooled host's RSS and PSS
 * (baselines.ts `hostIdleMemory`) and a host's start (`hostStartCost`), for the host as it is or
 * with `harness-snapshot-host.patch` applied (round 42 `harness-snapshot`).
 */
import { hostIdleMemory, hostStartCost } from './baselines.ts';

const m = await hostIdleMemory();
const s = await hostStartCost();
console.log(
  `idle RSS ${m.rssMb.toFixed(1)} MB PSS ${m.pssMb.toFixed(1)} threads ${m.threads}; start wall ${s.wallMs.toFixed(0)} ms cpu ${s.cpuMs.toFixed(0)} ms`,
);
