/**
 * Two releases on one Redis for the mixed-release tests (test/e2e/*-mixed.test.ts): this checkout's
 * cluster and a previous release's (previous-release.ts), sharing the secrets a run crosses releases
 * with, the raw HTTP answer both are compared by, and the comparisons every such test makes, a Redis
 * client and the run events it saw, and a local App registered as a connection.
 */
import { execFileSync } from 'node:child_process';
import { channels, createRedis } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { expect } from 'vitest';
import { type Delivery, startAppServer } from './helpers.ts';
import { type PreviousRelease, previousRelease } from './previous-release.ts';

/** Whether this clone holds `rev` (a shallow clone may not: the tests that need it are skipped). */
export function hasCommit(rev: string): boolean {
  try {
    execFileSync('git', ['cat-file', '-e', `${rev}^{commit}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface MixedReleases {
  release: PreviousRelease;
  head: Cluster;
  prev: Cluster;
  /** A client of the shared Redis, for the tests' own reads. */
  redis: ReturnType<typeof createRedis>;
  /** Every message published on the run-events channel since the start (the pushed ends among them). */
  runEvents: string[];
  stop(): Promise<void>;
}

/**
 * This release's settings beside a release older than 6b60376a (round 46's end): its runners hold no
 * live channel, so the gateway's liveness check (on by default since round 47) is off for that roll.
 */
export const OLDER_THAN_6B60376A = { ISLET_HANDOFF_LIVE_CHECK: 'off' };

/** This release's settings beside a release older than 9ec25e04 (the two writers it cannot read off, the check off). */
export const OLDER_THAN_9EC25E04 = {
  ISLET_HANDOFF_COMPACT_TERMS: 'off',
  ISLET_CALL_ONE_SEAL: 'false',
  ...OLDER_THAN_6B60376A,
};

/** The settings every release of one roll holds alike (a run's seals, journal and workspace cross them). */
const SHARED = ['ISLET_SEAL_KEYS', 'ISLET_INTERNAL_TOKEN', 'ISLET_JOURNAL_ARGS_KEY', 'ISLET_WORKSPACE_ROOT'];

/** `head`'s values of the shared settings, for another cluster started on its Redis. */
export function sharedWith(head: Cluster): Record<string, string> {
  return Object.fromEntries(SHARED.map((name) => [name, head.env[name] as string]));
}

/**
 * One gateway and one read-only runner of each release on the head's Redis.
 * `headEnv`: this release's extra settings; beside a release older than 9ec25e04 (the first to read
 * the compact hand-off registration and the one-seal `call` event, which this release writes by
 * default) `OLDER_THAN_9EC25E04`, as a roll from such a release is documented to run
 * (charts/islet/README.md, upgrades). `prevEnv`: the previous release's extra settings.
 */
export async function startMixed(
  rev: string,
  headEnv: Record<string, string> = {},
  prevEnv: Record<string, string> = {},
): Promise<MixedReleases> {
  const release = await previousRelease(rev);
  let head: Cluster | undefined;
  try {
    head = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'] }], env: headEnv });
    const prev = await release.startCluster({
      redisUrl: head.redisUrl,
      gateways: 1,
      runners: [{ modes: ['read-only'] }],
      env: {
        ...prevEnv,
        ...sharedWith(head),
        // Its sandbox hosts outside the kernel launcher: the launcher's view of the file system is
        // this checkout's, not the tree's (a host there exits at its start). What these tests
        // check is the stored and pushed forms and their readers, not the sandbox.
        ISLET_SANDBOX_JAIL: 'off',
      },
    });
    const started = head;
    const redis = createRedis(head.redisUrl);
    const sub = createRedis(head.redisUrl);
    const runEvents: string[] = [];
    sub.on('message', (_channel: string, message: string) => runEvents.push(message));
    await sub.subscribe(channels.runEvents);
    return {
      release,
      head: started,
      prev,
      redis,
      runEvents,
      async stop() {
        sub.disconnect();
        redis.disconnect();
        await prev.stop();
        await started.stop();
        release.remove();
      },
    };
  } catch (err) {
    await head?.stop();
    release.remove();
    throw err;
  }
}

/** The raw answer of `method path` on `url` (its body as text: compared byte for byte). */
export async function call(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * A run submitted on `gw`'s gateway with `Prefer: wait=<waitS>`; anything but 200 fails the test.
 * Its raw answer (`text`, compared byte for byte) and that answer parsed.
 */
export async function submitWaited<T = { id: string; status: string }>(
  gw: Cluster,
  body: Record<string, unknown>,
  waitS: number,
): Promise<{ text: string; body: T }> {
  const res = await call(gw.url, gw.devKey, 'POST', '/v1/runs', body, { prefer: `wait=${waitS}` });
  expect(res.status, res.text).toBe(200);
  return { text: res.text, body: JSON.parse(res.text) as T };
}

/** The ends pushed for run `id` (`<id> end…` messages among `runEvents`), in order. */
export const pushedEnds = (runEvents: string[], id: string) =>
  runEvents.filter((m) => m.startsWith(`${id} end`));

/** A pushed end's tag (`end`, `end2`, `end3`). */
export const tagOf = (message: string) => message.split(' ')[1];

/** Expects `answer` (a waited run's body) to be byte for byte the `GET` of run `id` on each gateway. */
export async function expectReadAlike(answer: string, id: string, gateways: Cluster[]): Promise<void> {
  for (const g of gateways) {
    const read = await call(g.url, g.devKey, 'GET', `/v1/code-runs/${id}`);
    expect(read.status).toBe(200);
    expect(answer).toBe(read.text);
  }
}

/** Expects both gateways to answer the sessions list and the usage with the same bytes; the list parsed. */
export async function expectSessionsAlike<T>(a: Cluster, b: Cluster): Promise<{ items: T[] }> {
  for (const path of ['/v1/sessions?limit=50', '/v1/usage']) {
    const first = await call(a.url, a.devKey, 'GET', path);
    const second = await call(b.url, b.devKey, 'GET', path);
    expect(first.status, first.text).toBe(200);
    expect(second.text).toBe(first.text);
  }
  return JSON.parse((await call(a.url, a.devKey, 'GET', '/v1/sessions?limit=50')).text) as { items: T[] };
}

/** An App's answer to every call: 200, the call's own arguments as its `structuredContent`. */
export const echoArguments = async (d: Delivery) => ({
  status: 200,
  body: JSON.stringify({ structuredContent: d.body.arguments ?? {} }),
});

/**
 * A local App (helpers.ts `startAppServer`, answering with `handler`) registered on `gw` as an http
 * connection named `name` with `tools`; anything but 201 fails the test. The App and the connection's id.
 */
export async function connectApp(
  gw: Cluster,
  handler: Parameters<typeof startAppServer>[0],
  name: string,
  tools: Record<string, unknown>[],
): Promise<{ app: Awaited<ReturnType<typeof startAppServer>>; connectionId: string }> {
  const app = await startAppServer(handler);
  try {
    const conn = await call(gw.url, gw.devKey, 'POST', '/v1/connections', {
      name,
      kind: 'http',
      url: app.url,
      tools,
    });
    expect(conn.status, conn.text).toBe(201);
    return { app, connectionId: (JSON.parse(conn.text) as { id: string }).id };
  } catch (err) {
    await app.close();
    throw err;
  }
}
