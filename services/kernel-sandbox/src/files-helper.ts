/**
 * Client of `islet-files` (native/islet-files.c): long-lived helper processes, one small pool per
 * workspace root, speaking length-prefixed frames over stdin/stdout. Node's `fs` cannot resolve a
 * path beneath a directory fd (openat2), so every workspace operation goes through a helper.
 *
 * A helper answers its requests in order, so each process keeps a FIFO of pending requests. A helper
 * that dies or stops answering (per-request deadline) fails its pending requests with `unavailable`
 * and is replaced on the next request. Idle helpers do not keep the event loop alive.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { filesHelperPath } from './paths.ts';
import { WorkspaceError, type WorkspaceErrorCode } from './workspace-errors.ts';

const FILES_OP = {
  read: 1,
  write: 2,
  list: 3,
  stat: 4,
  remove: 5,
  rename: 6,
  mkdir: 7,
  usage: 8,
  drop: 9,
  ensure: 10,
} as const;
type FilesOp = keyof typeof FILES_OP;

/** Status byte → error code; index 0 is success. Mirrors the enum in islet-files.c. */
const STATUS: ReadonlyArray<WorkspaceErrorCode | undefined> = [
  undefined,
  'invalid-path',
  'outside-workspace',
  'not-found',
  'is-directory',
  'file-too-large',
  'workspace-full',
  'unsupported-file-type',
  'io-error',
  'busy',
];

interface FilesRequest {
  op: FilesOp;
  /** The workspace, relative to the root: `tenant/session`, or `.` for the root itself. */
  ws: string;
  path?: string;
  path2?: string;
  n1?: number;
  n2?: number;
  n3?: number;
  data?: Buffer;
}

/** Longest a single operation may take before its helper is presumed stuck and replaced. */
const REQUEST_DEADLINE_MS = 30_000;

function encode(req: FilesRequest): Buffer {
  const strs = [req.ws, req.path ?? '', req.path2 ?? ''].map((s) => Buffer.from(s, 'utf8'));
  const data = req.data ?? Buffer.alloc(0);
  const head = Buffer.alloc(4 + 25);
  const len = 25 + strs.reduce((n, s) => n + 2 + s.length, 0) + data.length;
  head.writeUInt32LE(len, 0);
  head.writeUInt8(FILES_OP[req.op], 4);
  head.writeBigUInt64LE(BigInt(req.n1 ?? 0), 5);
  head.writeBigUInt64LE(BigInt(req.n2 ?? 0), 13);
  head.writeBigUInt64LE(BigInt(req.n3 ?? 0), 21);
  const parts: Buffer[] = [head];
  for (const s of strs) {
    const l = Buffer.alloc(2);
    l.writeUInt16LE(s.length, 0);
    parts.push(l, s);
  }
  parts.push(data);
  return Buffer.concat(parts);
}

interface Handle {
  ref?: () => void;
  unref?: () => void;
}

interface Pending {
  resolve: (payload: Buffer) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** One helper process. */
class HelperProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending: Pending[] = [];
  private chunks: Buffer[] = [];
  private buffered = 0;
  private stderr = '';
  dead = false;

  constructor(root: string) {
    this.child = spawn(filesHelperPath(), [root], { stdio: ['pipe', 'pipe', 'pipe'], env: {} });
    this.child.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-2000);
    });
    this.child.stdin.on('error', () => this.die('its input pipe closed'));
    this.child.on('error', (err) => this.die(err.message));
    this.child.on('exit', (code, signal) => this.die(`exited (${signal ?? code})`));
    this.idle();
  }

  get pid(): number | undefined {
    return this.dead ? undefined : this.child.pid;
  }

  get load(): number {
    return this.pending.length;
  }

  request(frame: Buffer): Promise<Buffer> {
    if (this.dead) return Promise.reject(unavailable('the file helper is not running'));
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        this.die(`no answer within ${REQUEST_DEADLINE_MS} ms`);
      }, REQUEST_DEADLINE_MS);
      timer.unref();
      this.pending.push({ resolve, reject, timer });
      this.busy();
      this.child.stdin.write(frame);
    });
  }

  kill(): void {
    this.child.kill('SIGKILL');
    this.die('closed');
  }

  // Chunks are joined only once a whole frame is there (a 10 MiB answer arrives in many pieces).
  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.buffered < 4) return;
      if (this.chunks[0]!.length < 4) this.chunks = [Buffer.concat(this.chunks)];
      const len = this.chunks[0]!.readUInt32LE(0);
      if (this.buffered < 4 + len) return;
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      const frame = all.subarray(4, 4 + len);
      const rest = all.subarray(4 + len);
      this.chunks = rest.length ? [rest] : [];
      this.buffered = rest.length;
      const p = this.pending.shift();
      if (!p) {
        this.kill(); // an answer nobody asked for: the stream is out of step
        return;
      }
      clearTimeout(p.timer);
      if (this.pending.length === 0) this.idle();
      const status = frame[0] ?? 8;
      if (status === 0) p.resolve(frame.subarray(1));
      else p.reject(new WorkspaceError(STATUS[status] ?? 'io-error', frame.subarray(1).toString('utf8')));
    }
  }

  private die(why: string): void {
    if (this.dead) return;
    this.dead = true;
    const detail = this.stderr.trim() ? `: ${this.stderr.trim()}` : '';
    for (const p of this.pending.splice(0)) {
      clearTimeout(p.timer);
      p.reject(unavailable(`the workspace file helper ${why}${detail}`));
    }
  }

  // The pipes are sockets underneath; only a helper with requests in flight keeps the loop alive.
  private busy(): void {
    this.child.ref();
    for (const s of [this.child.stdout, this.child.stdin]) (s as unknown as Handle).ref?.();
  }

  private idle(): void {
    this.child.unref();
    for (const s of [this.child.stdout, this.child.stderr, this.child.stdin])
      (s as unknown as Handle).unref?.();
  }
}

function unavailable(message: string): WorkspaceError {
  return new WorkspaceError('unavailable', message);
}

/** A small pool of helpers for one workspace root; requests go to the least loaded one. */
export class FilesHelper {
  readonly root: string;
  private readonly procs: Array<HelperProcess | undefined>;

  constructor(root: string, size = 2) {
    this.root = resolve(root);
    this.procs = new Array(size).fill(undefined);
  }

  async request(req: FilesRequest): Promise<Buffer> {
    let best = -1;
    for (let i = 0; i < this.procs.length; i++) {
      const p = this.procs[i];
      if (!p || p.dead) {
        best = i;
        break;
      }
      if (best < 0 || p.load < this.procs[best]!.load) best = i;
    }
    let proc = this.procs[best];
    if (!proc || proc.dead) {
      // The root is the platform's own configured directory, never a tenant path.
      mkdirSync(this.root, { recursive: true, mode: 0o755 });
      proc = new HelperProcess(this.root);
      this.procs[best] = proc;
    }
    return proc.request(encode(req));
  }

  /** Process ids of the running helpers (tests kill them to prove a crash is survived). */
  pids(): number[] {
    return this.procs.flatMap((p) => (p?.pid !== undefined ? [p.pid] : []));
  }

  close(): void {
    for (const p of this.procs) p?.kill();
    this.procs.fill(undefined);
  }
}

const shared = new Map<string, FilesHelper>();

/** The process-wide helper pool for a root (every store and binding on that root shares it). */
export function filesHelperFor(root: string): FilesHelper {
  const key = resolve(root);
  let h = shared.get(key);
  if (!h) {
    h = new FilesHelper(key);
    shared.set(key, h);
  }
  return h;
}

/** Stops every helper this process started (tests, shutdown). Later requests start new ones. */
export function closeFilesHelpers(): void {
  for (const h of shared.values()) h.close();
  shared.clear();
}
