/**
 * One child process of the local cluster (cluster.ts), a gateway or a runner: started in its own
 * process group, ready once it prints its ready line, moved to new ports when another process took
 * one of its ports first.
 */
import type { ChildProcess } from 'node:child_process';
import { SERVICE_NODE_FLAGS } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import { spawnOwned } from '@islet/testkit';

export interface ProcessInfo {
  kind: 'gateway' | 'runner';
  index: number;
  url: string;
  port: number;
  /** Gateways: where runners send binding calls (its own port, like in production). */
  internalUrl?: string;
  pid: number | undefined;
  alive: boolean;
  /** How the last launch ended: its exit code, or the signal that killed it (SIGKILL: it outlived its grace). */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  modes?: SandboxMode[];
}

export interface Child {
  info: ProcessInfo;
  proc?: ChildProcess;
  env: Record<string, string>;
  script: string;
  lines: string[];
}

interface LaunchOptions {
  /** How long a child may take to print its ready line. */
  readyTimeoutMs: number;
  /** Forward its output to this process's stderr. */
  verbose: boolean | undefined;
}

export function launchChild(child: Child, options: LaunchOptions): Promise<void> {
  const { readyTimeoutMs } = options;
  return new Promise<void>((resolve, reject) => {
    // Its own process group (sandbox hosts included), killed with this process whatever happens.
    // The services' own Node flags, as the images' entry points give them (`SERVICE_NODE_FLAGS`);
    // `ISLET_DEV_NODE_FLAGS` (space-separated) adds to them, for a bench trying another flag.
    const extra = process.env.ISLET_DEV_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
    const flags = [...SERVICE_NODE_FLAGS[child.info.kind], ...extra];
    const proc = spawnOwned(process.execPath, [...flags, child.script], {
      env: child.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.proc = proc;
    child.info.pid = proc.pid;
    child.info.exit = undefined;
    let ready = false;
    const timer = setTimeout(() => {
      if (!ready)
        reject(
          new Error(
            `${child.info.kind} ${child.info.index} not ready in ${readyTimeoutMs} ms:\n${child.lines.join('\n')}`,
          ),
        );
    }, readyTimeoutMs);
    const onLine = (line: string) => {
      child.lines.push(line);
      if (child.lines.length > 200) child.lines.shift();
      if (options.verbose) process.stderr.write(`[${child.info.kind}-${child.info.index}] ${line}\n`);
      if (!ready && line.includes(`"islet":"${child.info.kind}-ready"`)) {
        ready = true;
        child.info.alive = true;
        clearTimeout(timer);
        resolve();
      }
    };
    for (const stream of [proc.stdout, proc.stderr]) {
      let buf = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        buf += chunk;
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          onLine(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
          nl = buf.indexOf('\n');
        }
      });
    }
    proc.once('exit', (code, signal) => {
      child.info.alive = false;
      child.info.exit = { code, signal };
      if (!ready) {
        clearTimeout(timer);
        reject(
          new Error(
            `${child.info.kind} ${child.info.index} exited (${code ?? signal}) before ready:\n${child.lines.join('\n')}`,
          ),
        );
      }
    });
  });
}

/**
 * A port from freePort() is free when picked, not when the child binds it: any process (an
 * outgoing connection's ephemeral port included) may take it in between. A child that exits
 * with EADDRINUSE is moved to new free ports and started again; a port the caller fixed is not.
 */
export async function relaunchOnFreePorts(
  child: Child,
  launch: (child: Child) => Promise<void>,
  pickPort: () => Promise<number>,
  firstGatewayPortFixed: boolean,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(child);
    } catch (err) {
      const inUse = err instanceof Error ? /EADDRINUSE[^\n]*:(\d+)/.exec(err.message)?.[1] : undefined;
      const fixed = child.info.kind === 'gateway' && child.info.index === 0 && firstGatewayPortFixed;
      if (!inUse || (fixed && inUse === String(child.info.port)) || attempt >= 3) throw err;
      child.lines.length = 0;
      const port = fixed ? child.info.port : await pickPort();
      child.info.port = port;
      child.info.url = `http://127.0.0.1:${port}`;
      if (child.info.kind === 'runner') child.env.ISLET_RUNNER_METRICS_PORT = String(port);
      else {
        const internalPort = await pickPort();
        child.info.internalUrl = `http://127.0.0.1:${internalPort}`;
        child.env.ISLET_PORT = String(port);
        child.env.ISLET_INTERNAL_PORT = String(internalPort);
      }
    }
  }
}
