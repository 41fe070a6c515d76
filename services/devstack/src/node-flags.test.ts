/**
 * The local stack's gateway and runner run with the services' Node flags (`SERVICE_NODE_FLAGS`,
 * the images' entry points give the same: test/docker/dockerfiles.test.ts), read back from the
 * real processes: their command lines, and the young generation V8 made for them (`new_space`,
 * both halves, on each process's `/metrics`).
 */
import { readFileSync } from 'node:fs';
import { SERVICE_NODE_FLAGS } from '@islet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, startCluster } from './cluster.ts';

let cluster: Cluster | undefined;

beforeAll(async () => {
  cluster = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'], concurrency: 1 }] });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

const commandLine = (pid: number | undefined) =>
  readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

/** The new space's size a process's V8 reports (prom-client's `heap_space_size_total_bytes`). */
async function newSpaceBytes(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  const m = /^islet_nodejs_heap_space_size_total_bytes\{[^}]*space="new"[^}]*\} (\d+)$/m.exec(
    await res.text(),
  );
  expect(m, 'new space gauge').not.toBeNull();
  return Number(m![1]);
}

const MiB = 1024 * 1024;

describe('the services’ Node flags', () => {
  it('are on the gateway’s and the runner’s command lines, before their entry point', () => {
    for (const kind of ['gateway', 'runner'] as const)
      expect(SERVICE_NODE_FLAGS[kind], kind).toEqual(['--min-semi-space-size=4', '--max-semi-space-size=4']);
    for (const [kind, info] of [
      ['gateway', cluster!.gateways[0]],
      ['runner', cluster!.runners[0]],
    ] as const) {
      const args = commandLine(info?.pid);
      const flags = SERVICE_NODE_FLAGS[kind];
      expect(args.slice(1, 1 + flags.length), kind).toEqual(flags);
      expect(args[1 + flags.length], kind).toMatch(new RegExp(`services/${kind}/src/main\\.ts$`));
    }
  });

  it('size the young generation V8 made for each process: 4 MiB a semi-space, held there', async () => {
    // Held (min = max): both halves from the process's first scavenge on (its start makes many),
    // whatever the load; Node's own default starts at 1 MiB a half and grows to 64.
    for (const url of [cluster!.gateways[0]!.url, cluster!.runners[0]!.url])
      expect(await newSpaceBytes(url), url).toBe(2 * 4 * MiB);
  });
});
