import { api } from '../e2e/helpers.ts';
import { measure, parallelCalls, pct, sequentialCalls } from './baselines.ts';
import { messageFloor, probeFsyncDuring } from './message-floor.ts';
import { appStamps, pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const PARALLEL = process.env.PARALLEL === '1';
const CALLS = Number(process.env.CALLS ?? (PARALLEL ? 100 : 20));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

const floor = PARALLEL ? undefined : await messageFloor();
const { app, port } = await startPingApp();
const stamps = appStamps(app);
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
try {
  const connection = await pingConnection(a, port);
  const run = async (code: string) => {
    await runWithApp(a, code, connection);
  };
  const program = PARALLEL ? parallelCalls(CALLS) : sequentialCalls(CALLS);
  for (let i = 0; i < 5; i++) await run(program);
  const trivial = await measure(() => run('return 1'), { seconds: SECONDS / 2, minRuns: 20 });

  // The floor's fsync'd write timed again during sequential calls (message-floor.ts).
  const probe = PARALLEL ? undefined : probeFsyncDuring(cluster.redisUrl);
  const probeMs = probe?.ms ?? [];
  const gaps: number[] = [];
  const outside: number[] = [];
  const inApp: number[] = [];
  const heads: number[] = [];
  const spreads: number[] = [];
  const answering: number[] = [];
  const tails: number[] = [];
  const walls: number[] = [];
  const withCalls = await measure(
    async () => {
      stamps.clear();
      const t0 = performance.now();
      await run(program);
      const t1 = performance.now();
      const { arrived, answered } = stamps;
      if (arrived.length !== CALLS) throw new Error(`${arrived.length} App requests for ${CALLS} calls`);
      walls.push(t1 - t0);
      if (PARALLEL) {
        const lastAnswer = Math.max(...answered);
        heads.push(arrived[0]! - t0);
        spreads.push(arrived[CALLS - 1]! - arrived[0]!);
        answering.push(lastAnswer - arrived[CALLS - 1]!);
        tails.push(t1 - lastAnswer);
        return;
      }
      heads.push(arrived[0]! - t0);
      tails.push(t1 - answered[CALLS - 1]!);
      for (let i = 0; i + 1 < CALLS; i++) {
        gaps.push(arrived[i + 1]! - arrived[i]!);
        outside.push(arrived[i + 1]! - answered[i]!);
        inApp.push(answered[i]! - arrived[i]!);
      }
    },
    { seconds: SECONDS, warmup: 0, minRuns: 10 },
  );
  await probe?.stop();
  const f = (x: number) => x.toFixed(3);
  if (PARALLEL) {
    console.log(`${CALLS} parallel calls a run, ${withCalls.runs} runs in ${SECONDS} s`);
    console.log(
      `run p50 ${f(withCalls.p50)} ms (trivial ${f(trivial.p50)}); p50s, ms: submit → the App's first request ${f(pct(heads, 50))}, ` +
        `its first → last request ${f(pct(spreads, 50))}, the last request → the last answer written ${f(pct(answering, 50))}, ` +
        `the last answer → the run's response ${f(pct(tails, 50))}`,
    );
  } else {
    const p50 = pct(gaps, 50);
    console.log(
      `${CALLS} sequential calls a run, ${withCalls.runs} runs in ${SECONDS} s, ${gaps.length} round trips`,
    );
    console.log(
      `round trip inside a run (App arrival → next arrival): p50 ${f(p50)} ms, p25 ${f(pct(gaps, 25))}, p90 ${f(pct(gaps, 90))}; ` +
        `of which in the App (arrival → answer written) p50 ${f(pct(inApp, 50))}, outside it p50 ${f(pct(outside, 50))}`,
    );
    console.log(
      `the old reading ((run p50 − trivial p50) / ${CALLS}): ${f((withCalls.p50 - trivial.p50) / CALLS)} ms (run p50 ${f(withCalls.p50)}, trivial ${f(trivial.p50)}); ` +
        `the run's ends, p50: submit → the App's first request ${f(pct(heads, 50))} ms, the last answer written → the run's response ${f(pct(tails, 50))} ms ` +
        `(together ${f(pct(heads, 50) + pct(tails, 50))} ms against a trivial run's ${f(trivial.p50)} plus a call's ${f(p50)})`,
    );
    if (floor) {
      const fsyncNow = pct(probeMs, 50);
      const floorNow = 2 * floor.tcpMs + 2 * fsyncNow + floor.pipeMs;
      console.log(
        `a lone call's messages: ${f(floor.callMs)} ms (2 TCP ${f(floor.tcpMs)}, 2 fsync'd writes ${f(floor.fsyncWriteMs)}, pipe ${f(floor.pipeMs)}): ` +
          `${(p50 / floor.callMs).toFixed(2)}x; with the fsync'd write probed during the calls (p50 ${f(fsyncNow)}, ${probeMs.length} probes) ` +
          `${f(floorNow)} ms: ${(p50 / floorNow).toFixed(2)}x`,
      );
    }
  }
} finally {
  await cluster.stop();
  app.close();
}
