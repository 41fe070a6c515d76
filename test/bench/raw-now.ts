/**
 * `node --no-node-snapshot test/bench/raw-now.ts`: the machine's own speed in these minutes — raw
 * isolated-vm (new isolate + context + eval + dispose, one client, `RAW_SECONDS`, default 2) as
 * `bench:cluster`'s baseline measures it — for a line beside other benches in `ab.sh`'s sides
 * (before and after each), so a figure that moved with the machine shows it moved there too.
 */
import { rawIsolateBaseline } from './baselines.ts';

const s = await rawIsolateBaseline(Number(process.env.RAW_SECONDS ?? 2));
console.log(
  `raw isolated-vm: ${s.perSec.toFixed(1)} runs/s, p50 ${s.p50.toFixed(2)} ms, cpu ${s.cpuMsPerRun?.toFixed(2)} ms a run`,
);
