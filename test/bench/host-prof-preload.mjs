// Preloaded into a sandbox host by `test/bench/engine-stage-prof.ts` (NODE_OPTIONS=--import): a CPU
// profile of the host's main thread (inspector, `PROF_US` µs sampling), written to `PROF_OUT` on
// SIGUSR2 (the engine stops a host by SIGKILL, so `--cpu-prof`'s write at exit never comes). Bench only.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROF_US ?? 50) });
session.post('Profiler.start');
process.on('SIGUSR2', () => {
  session.post('Profiler.stop', (err, res) => {
    if (!err)
      writeFileSync(
        process.env.PROF_OUT ?? `/tmp/host-${process.pid}.cpuprofile`,
        JSON.stringify(res.profile),
      );
  });
});
