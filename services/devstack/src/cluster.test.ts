/**
 * A local cluster never outlives whoever started it: a start that fails midway stops what it had
 * started, and a parent killed with SIGKILL (no clean-up code runs) takes its cluster with it.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort } from '@islet/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { startCluster } from './cluster.ts';

/** Every live descendant of `root`. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      children.set(Number(ppid), [...(children.get(Number(ppid)) ?? []), Number(name)]);
    } catch {}
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const c of children.get(queue.shift()!) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

async function waitGone(pids: number[], ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  let left = pids.filter(alive);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = left.filter(alive);
  }
  return left;
}

const leftovers: number[] = [];
afterAll(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
});

describe('startCluster leaves no process behind', () => {
  it('a start that fails midway (a runner refuses its configuration) stops Redis and the gateway', async () => {
    const before = new Set(descendants(process.pid));
    let started: number[] = [];
    const error = await startCluster({
      gateways: 1,
      // The gateway starts; the runner exits at once: ISLET_RUNNER_CONCURRENCY must be ≥ 1.
      runners: [{ modes: ['read-only'], concurrency: 0 }],
    }).then(
      async (c) => {
        await c.stop();
        return undefined;
      },
      (err: Error) => {
        started = descendants(process.pid).filter((p) => !before.has(p));
        return err;
      },
    );
    expect(error?.message).toMatch(/runner 0 exited \(1\) before ready/);
    const left = await waitGone(
      descendants(process.pid).filter((p) => !before.has(p)),
      5000,
    );
    leftovers.push(...left);
    expect(left).toEqual([]);
    expect(started.every((p) => !alive(p))).toBe(true);
  }, 60_000);

  it('a parent killed with SIGKILL takes its gateway, runner and Redis with it', async () => {
    const index = fileURLToPath(new URL('./index.ts', import.meta.url));
    const parent = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { startCluster } from ${JSON.stringify(index)};
         await startCluster({ modes: ['read-only'] });
         console.log('up');
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    leftovers.push(parent.pid!);
    await new Promise<void>((resolve, reject) => {
      parent.stdout!.on('data', (d: Buffer) => d.toString().includes('up') && resolve());
      parent.once('exit', (code) =>
        reject(new Error(`the parent exited (${code}) before its cluster was up`)),
      );
    });
    const cluster = descendants(parent.pid!);
    leftovers.push(...cluster);
    const names = cluster.map((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    expect(names.some((n) => n.includes('redis-server'))).toBe(true);
    expect(names.some((n) => n.includes('gateway/src/main.ts'))).toBe(true);
    expect(names.some((n) => n.includes('runner/src/main.ts'))).toBe(true);
    parent.kill('SIGKILL');
    expect(await waitGone(cluster, 10_000)).toEqual([]);
  }, 90_000);
});

describe('startCluster on ports taken after they were picked', () => {
  it('moves a gateway and a runner whose port another process took to new ports, and runs a program', async () => {
    // Three listeners hold the first three ports handed out (the gateway's public and internal
    // ports, the runner's metrics port), as another process taking them between pick and bind.
    const held = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<Server>((resolve) => {
            const s = createServer();
            s.listen(0, '127.0.0.1', () => resolve(s));
          }),
      ),
    );
    const heldPorts = held.map((s) => (s.address() as AddressInfo).port);
    const queue = [...heldPorts];
    let picks = 0;
    const pickPort = async () => {
      picks++;
      return queue.shift() ?? freePort();
    };
    const cluster = await startCluster({ modes: ['read-only'], pickPort }).finally(() =>
      Promise.all(held.map((s) => new Promise((r) => s.close(r)))),
    );
    try {
      expect(heldPorts).not.toContain(cluster.gateways[0]!.port);
      expect(heldPorts).not.toContain(cluster.runners[0]!.port);
      // Two picks for the gateway and one for the runner at first, then new ones for each move.
      expect(picks).toBeGreaterThan(3);
      const res = await fetch(`${cluster.url}/v1/runs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${cluster.devKey}`,
          'content-type': 'application/json',
          prefer: 'wait=20',
        },
        body: JSON.stringify({
          code: 'return 6 * 7',
          description: 'Multiply',
          sessionId: 'sess-ports',
          turnId: 'turn-1',
          callId: 'call-1',
        }),
      });
      const body = (await res.json()) as { status: string; text?: string };
      expect(body.status, JSON.stringify(body)).toBe('Completed');
      expect(body.text).toContain('42');
    } finally {
      await cluster.stop();
    }
  }, 90_000);
});
