/**
 * The engine-stage probes' run options (engine-stage.ts, engine-stage-prof.ts): a trivial run of
 * tenant-a's partition with the contract's default limits, fixed clock and seed, no bindings.
 * Not product code: a bench probe's fixture.
 */
export const trivialRunOptions = () => ({
  bindings: [],
  onCall: async () => ({ type: 'error' as const, name: 'AppCallFailed' as const, message: 'none' }),
  limits: {
    timeoutMs: 120_000,
    timeBudget: 'elapsed' as const,
    memoryMb: 128,
    outputBytes: 65_536,
    outputCap: 'shared' as const,
  },
  clockMs: 1792486800000,
  randomSeed: 'run-8f1c',
  signal: new AbortController().signal,
  partition: 'tenant-a',
});
