/**
 * `valgrind --tool=callgrind node test/bench/parking-answers-cg.ts <call-parking.ts path> <runs>`
 * (round 46, `park-timer`): `runs` executions' `CallParking` of 100 parallel calls, each answered
 * in its own microtask turn, nothing else: the instructions a run are the difference between
 * `runs` = N and 0, over N. Another release's file: `git show <rev>:services/runner/src/call-parking.ts > /tmp/x.ts`.
 */
const mod = await import(process.argv[2] as string);
const N = Number(process.argv[3]);
const slot = { park: () => true, resume: async () => {} };
const answer = { outcome: { type: 'result', valueJson: '1' } };
for (let r = 0; r < N; r++) {
  const parking = new mod.CallParking(slot, 100);
  const resolvers: (() => void)[] = [];
  const live = parking.wrap(() => new Promise((res) => resolvers.push(() => res(answer))));
  const all = [];
  for (let i = 0; i < 100; i++) all.push(live({ index: i, binding: 'a.b', argsJson: '{}' }));
  for (const f of resolvers) {
    f();
    await null;
  }
  await Promise.all(all);
  parking.close();
}
