/**
 * Request timeouts for Kubernetes API calls: a hung call (API server or network stalled) rejects
 * after `ms` instead of holding a reconcile, or a Lease renewal, forever.
 */
class RequestTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no answer within ${ms} ms`);
    this.name = 'RequestTimeoutError';
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RequestTimeoutError(what, ms)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Wraps every method of an API object so each call times out after `ms`. */
export function withTimeouts<T extends object>(api: T, ms: number): T {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const r = (v as (...a: unknown[]) => unknown).apply(target, args);
        return r instanceof Promise ? withTimeout(r, ms, String(prop)) : r;
      };
    },
  });
}
