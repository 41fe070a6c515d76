/**
 * A run as `@islet/runs`' store takes it (its `StoredRun`), for tests and benches that write a run
 * directly and do not care what it runs: a trivial read-only program, no attempt made yet, created
 * at `createdAt` (default now; `updatedAt` and `clockMs` follow it). `over` replaces or adds any
 * field. Plain data: testkit depends on no other workspace, the store checks the shape.
 */
function defaults(id: string, at: number) {
  return {
    id,
    tenant: 'acme',
    session: 's',
    turn: 't',
    callId: 'c',
    status: 'Running' as const,
    mode: 'read-only' as const,
    code: 'return 1',
    description: 'Return one',
    request: { connections: [] as string[], bindings: [] as never[] },
    createdAt: at,
    updatedAt: at,
    attempts: 0,
    cancelRequested: false,
    clockMs: at,
    seed: id,
  };
}

export type RunFixture = ReturnType<typeof defaults>;

export function runFixture<O extends object = Record<never, never>>(
  id: string,
  over?: O & { createdAt?: number },
): Omit<RunFixture, keyof O> & O {
  const at = over?.createdAt ?? Date.now();
  const base: Omit<RunFixture, keyof O> = defaults(id, at);
  return { ...base, ...(over ?? ({} as O)) };
}
