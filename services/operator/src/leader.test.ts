// LeaderElector's stop against renewals still in flight, on an in-memory Lease API (a FAKE named as
// such: the real kube-apiserver runs in test/kube; here the test must hold single calls open at will).
import type { V1Lease } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { LeaderElector } from './leader.ts';

interface Held {
  /** Resolves once the call is being held. */
  arrived: Promise<void>;
  /** Lets the call go on. */
  go(): void;
}

/** FAKE Lease API: one Lease, optimistic concurrency on resourceVersion, calls that can be held. */
class FakeLeaseApi {
  lease: V1Lease | undefined;
  private rv = 0;
  private readonly holds: {
    kind: 'read' | 'replace';
    stale: boolean;
    arrive(): void;
    wait: Promise<void>;
  }[] = [];

  /**
   * Holds the next call of `kind`. `stale`: a read answered by the server at once whose answer is
   * delayed on its way back (it shows the Lease as it was); otherwise the request is delayed before
   * the server sees it.
   */
  hold(kind: 'read' | 'replace', stale = false): Held {
    let arrive!: () => void;
    let go!: () => void;
    const arrived = new Promise<void>((r) => {
      arrive = r;
    });
    const wait = new Promise<void>((r) => {
      go = r;
    });
    this.holds.push({ kind, stale, arrive, wait });
    return { arrived, go };
  }

  private take(kind: 'read' | 'replace') {
    const at = this.holds.findIndex((h) => h.kind === kind);
    return at < 0 ? undefined : this.holds.splice(at, 1)[0];
  }

  readNamespacedLease = async (_: { name: string; namespace: string }): Promise<V1Lease> => {
    const held = this.take('read');
    let seen = this.lease ? structuredClone(this.lease) : undefined;
    if (held) {
      held.arrive();
      await held.wait;
      if (!held.stale) seen = this.lease ? structuredClone(this.lease) : undefined;
    }
    if (!seen) throw Object.assign(new Error('not found'), { code: 404 });
    return seen;
  };

  createNamespacedLease = async ({ body }: { namespace: string; body: V1Lease }): Promise<V1Lease> => {
    if (this.lease) throw Object.assign(new Error('exists'), { code: 409 });
    this.lease = {
      ...structuredClone(body),
      metadata: { ...body.metadata, resourceVersion: String(++this.rv) },
    };
    return structuredClone(this.lease);
  };

  replaceNamespacedLease = async ({
    body,
  }: {
    name: string;
    namespace: string;
    body: V1Lease;
  }): Promise<V1Lease> => {
    const held = this.take('replace');
    if (held) {
      held.arrive();
      await held.wait;
    }
    if (body.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion)
      throw Object.assign(new Error('conflict'), { code: 409 });
    this.lease = {
      ...structuredClone(body),
      metadata: { ...body.metadata, resourceVersion: String(++this.rv) },
    };
    return structuredClone(this.lease);
  };
}

const elector = (api: FakeLeaseApi, errors: unknown[]) =>
  new LeaderElector({
    api: api as never,
    namespace: 'ns',
    name: 'islet-operator',
    identity: 'op-a',
    leaseDurationMs: 60_000,
    renewDeadlineMs: 40_000,
    // No timer tick during a test: each renewal below is started by hand.
    retryPeriodMs: 600_000,
    onStartedLeading: () => {},
    onStoppedLeading: () => {},
    onError: (err) => errors.push(err),
  });

const renew = (a: LeaderElector) => (a as unknown as { tick(): Promise<void> }).tick();

async function leading(api: FakeLeaseApi, errors: unknown[]): Promise<LeaderElector> {
  const a = elector(api, errors);
  a.start();
  for (let i = 0; i < 100 && !a.isLeader; i++) await new Promise((r) => setImmediate(r));
  expect(a.isLeader).toBe(true);
  return a;
}

describe('LeaderElector.stop with a renewal in flight', () => {
  it('frees the Lease when the renewal lands between its read and its write (the 409 is read again)', async () => {
    const api = new FakeLeaseApi();
    const errors: unknown[] = [];
    const a = await leading(api, errors);
    const renewalWrite = api.hold('replace');
    const renewal = renew(a);
    await renewalWrite.arrived;
    // stop's read is answered with the Lease as it is now, but reaches stop only after the
    // renewal's write has landed and moved the resourceVersion.
    const stopRead = api.hold('read', true);
    const stopped = a.stop();
    await stopRead.arrived;
    renewalWrite.go();
    await renewal;
    stopRead.go();
    await stopped;
    expect(api.lease?.spec?.holderIdentity).toBeUndefined();
    expect(api.lease?.spec?.leaseDurationSeconds).toBe(1);
    expect(errors).toEqual([]);
  });

  it('a renewal whose read reaches the server after stop does not take the freed Lease back', async () => {
    const api = new FakeLeaseApi();
    const errors: unknown[] = [];
    const a = await leading(api, errors);
    const renewalRead = api.hold('read');
    const renewal = renew(a);
    await renewalRead.arrived;
    await a.stop();
    expect(api.lease?.spec?.holderIdentity).toBeUndefined();
    renewalRead.go();
    await renewal;
    expect(api.lease?.spec?.holderIdentity).toBeUndefined();
    expect(a.isLeader).toBe(false);
  });
});
