/**
 * The local stack's gateway and runner run with the services' Node flags (`SERVICE_NODE_FLAGS`,
 * the images' entry points give the same: test/docker/dockerfiles.test.ts), read back from the
 * real processes' command lines.
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

describe('the services’ Node flags', () => {
  it('are on the gateway’s and the runner’s command lines, before their entry point', () => {
    expect(SERVICE_NODE_FLAGS.gateway).toContain('--max-semi-space-size=16');
    expect(SERVICE_NODE_FLAGS.runner).toContain('--max-semi-space-size=16');
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
});
