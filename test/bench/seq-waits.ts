/**
 * `node test/bench/seq-waits.ts` (round 48, `seq-count`): where a process's main thread SLEEPS on a
 * one-client sequential run — each `epoll_pwait` that blocked, named by what woke it (the first fd
 * read after it returned: a Redis connection named by the commands this process writes on it, the
 * gateway's HTTP, a host's pipe) and by what the thread did last before it (its last write). For an
 * ABBA of two commits' `services/` (`bash test/bench/ab.sh <base> 1 "node test/bench/seq-waits.ts"`):
 * seq-count.ts read the runner's main thread sleeping ~0.3 more a run on f63d2625 than on 6b60376a,
 * with the same syscalls a run. `strace -tt -T` on the main thread alone (`PROCESS=runner|gateway`,
 * default runner) over `RUNS` runs (default 300) after `WARM` (default 200); an `epoll_pwait` counts
 * as blocked when it took ≥ `BLOCK_US` µs (default 40) and returned events. strace slows the traced
 * thread (each syscall a stop), so read the sleeps' places and counts, not their times.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 300);
const WARM = Number(process.env.WARM ?? 200);
const BLOCK_US = Number(process.env.BLOCK_US ?? 40);
const which = process.env.PROCESS === 'gateway' ? 'gateway' : 'runner';
const cluster = await startOneClientCluster('0.5');
const pid = (which === 'gateway' ? cluster.gateways : cluster.runners)[0]?.pid as number;
const redisPort = new URL(cluster.redisUrl).port;

/** socket inode → remote port (IPv4/IPv6 TCP), to tell Redis's connections from the rest. */
function remotePorts(): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6'])
    for (const l of readFileSync(f, 'utf8').split('\n').slice(1)) {
      const c = l.trim().split(/\s+/);
      if (c.length < 10) continue;
      out.set(c[9] as string, Number.parseInt((c[2] ?? '').split(':')[1] ?? '0', 16));
    }
  return out;
}
function fdKinds(): Map<number, string> {
  const ports = remotePorts();
  const out = new Map<number, string>();
  for (let fd = 0; fd < 4096; fd++) {
    let link: string;
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const sock = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    if (sock) {
      const port = ports.get(sock);
      out.set(fd, port === Number(redisPort) ? 'redis' : port === undefined ? 'socket' : `tcp:${port}`);
    } else if (link.startsWith('pipe:')) out.set(fd, 'pipe');
    else if (link.startsWith('anon_inode:')) out.set(fd, link.slice(11));
    else out.set(fd, 'file');
  }
  return out;
}

const isWrite = (n: string) => n === 'write' || n === 'writev' || n === 'sendmsg' || n === 'sendto';
const isRead = (n: string) => n === 'read' || n === 'recvmsg' || n === 'recvfrom';
const once = trivialRun(cluster, 'Seq waits');
try {
  await burst(once, WARM, 1);
  const out = join(tmpdir(), `seq-waits-${process.pid}.txt`);
  const st = spawn(
    'strace',
    [
      '-qq',
      '-tt',
      '-T',
      '-s',
      '160',
      '-e',
      'trace=epoll_pwait,epoll_wait,read,write,writev,sendmsg,recvmsg,sendto,recvfrom',
      '-o',
      out,
      '-p',
      String(pid),
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise((r) => st.once('exit', r));
  await new Promise((r) => setTimeout(r, 1000));
  await burst(once, RUNS, 1);
  const kinds = fdKinds();
  st.kill('SIGINT');
  await exited;
  const lines = readFileSync(out, 'utf8').split('\n');
  rmSync(out, { force: true });
  // A Redis connection named by the commands written on it (its first RESP command word).
  const cmdsOn = new Map<number, Set<string>>();
  const calls: { name: string; fd: number; us: number; ret: number }[] = [];
  for (const l of lines) {
    const m = /^\S+ (\w+)\((\d+), (.*) = (-?\d+).*<([\d.]+)>$/.exec(l);
    if (!m) continue;
    const [, name, fd, args, ret, secs] = m;
    calls.push({ name: name as string, fd: Number(fd), us: Number(secs) * 1e6, ret: Number(ret) });
    if (isWrite(name as string) && kinds.get(Number(fd)) === 'redis')
      for (const w of (args ?? '').matchAll(/\*\d+\\r\\n\$\d+\\r\\n([A-Za-z]+)/g)) {
        const cmd = w[1]?.toUpperCase() as string;
        (cmdsOn.get(Number(fd)) ?? cmdsOn.set(Number(fd), new Set()).get(Number(fd)))?.add(cmd);
      }
  }
  const label = (fd: number) => {
    const k = kinds.get(fd) ?? '?';
    if (k !== 'redis') return k === 'tcp:' ? k : k;
    return `redis[${[...(cmdsOn.get(fd) ?? [])].sort().slice(0, 4).join(',') || 'reads only'}]`;
  };
  const woken = new Map<string, number>();
  const after = new Map<string, number>();
  const pairs = new Map<string, number>();
  let blocked = 0;
  let waits = 0;
  let lastWrite = 'start';
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i] as (typeof calls)[number];
    if (isWrite(c.name)) lastWrite = `${c.name} ${label(c.fd)}`;
    if (!c.name.startsWith('epoll')) continue;
    waits++;
    if (c.ret <= 0 || c.us < BLOCK_US) continue;
    blocked++;
    const next = calls.slice(i + 1, i + 6).find((n) => isRead(n.name));
    const w = next ? label(next.fd) : 'none read';
    woken.set(w, (woken.get(w) ?? 0) + 1);
    after.set(lastWrite, (after.get(lastWrite) ?? 0) + 1);
    const both = `${lastWrite} → ${w}`;
    pairs.set(both, (pairs.get(both) ?? 0) + 1);
  }
  const r = (n: number) => (n / RUNS).toFixed(2);
  console.log(
    `${which} main thread, ${RUNS} one-client runs after ${WARM}: epoll waits ${r(waits)} a run, blocked (≥ ${BLOCK_US} µs, events) ${r(blocked)}`,
  );
  console.log('  blocked waits a run by what woke them (the next fd read):');
  for (const [k, v] of [...woken].sort((a, b) => b[1] - a[1]))
    if (v / RUNS >= 0.01) console.log(`    ${k.padEnd(52)} ${r(v)}`);
  console.log("  blocked waits a run by the thread's last write before them:");
  for (const [k, v] of [...after].sort((a, b) => b[1] - a[1]))
    if (v / RUNS >= 0.01) console.log(`    ${k.padEnd(52)} ${r(v)}`);
  console.log('  blocked waits a run by last write → what woke them:');
  for (const [k, v] of [...pairs].sort((a, b) => b[1] - a[1]))
    if (v / RUNS >= 0.01) console.log(`    ${k.padEnd(72)} ${r(v)}`);
} finally {
  await cluster.stop();
}
