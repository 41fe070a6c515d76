/**
 * Messages between the engine (parent) and a sandbox host process (child), carried as frames
 * (see frame.ts) over the child's stdin (to host) and stdout (to engine). Every field is plain
 * JSON; values of the program cross as JSON text inside these messages, never as objects.
 */
import { FAILURE_KINDS } from '@islet/protocol';
import type { FailureKind, LogLevel } from './types.ts';

export interface RunConfig {
  bindings: string[];
  clockMs: number;
  seed: string;
}

/** Engine → host. */
export type ToHost =
  | {
      t: 'run';
      code: string;
      config: RunConfig;
      memoryMb: number;
      outputBytes: number;
      outputCap: 'shared' | 'separate';
      /**
       * The run's time budget, ms (absent: none). The program's first turn runs on the host's own
       * thread, which cannot read an `end` meanwhile: past this the isolate stops it (timeout).
       */
      budgetMs?: number;
    }
  /**
   * A call's outcome. `turnMs` (present while the run's clock runs): the host may run the turn it
   * starts on its own thread with this as its deadline, and answers it with `turn` (see HostRun
   * `deliverResult`); absent, the turn runs on isolated-vm's thread and is not answered.
   */
  | { t: 'result'; id: number; valueJson: string; turnMs?: number }
  | { t: 'error'; id: number; name: string; message: string; detailsJson: string; turnMs?: number }
  /** End the current run now (deadline, abort, stop). The host answers with `done`. */
  | { t: 'end'; kind: FailureKind | 'stop' }
  /**
   * The engine read a `done` that said `held`: the host makes its next isolate now, or once its
   * delay after the run passed (not before: on its own it held the CPU the engine needed to read
   * that `done`; next-isolate.ts).
   */
  | { t: 'prepare' };

export type HostDone =
  | { status: 'completed'; valueJson?: string }
  | {
      status: 'failed';
      kind: FailureKind;
      message: string;
      detail?: string;
      cause?: 'memory';
      /** Where in the program an uncaught error was thrown (program lines, not the harness's). */
      where?: { line: number; column: number; stack: string };
    };

/** Host → engine. */
export type FromHost =
  | { t: 'ready'; pid: number }
  | { t: 'logs'; lines: [LogLevel, string][]; truncated?: boolean }
  | { t: 'call'; id: number; binding: string; argsJson: string }
  /**
   * The program's first turn, or a delivery's turn started with `turnMs`, returned and the program
   * still runs (it waits on calls): the host reads frames again. One per such turn, in order; a
   * program that ended in the turn sends `done` instead.
   */
  | { t: 'turn' }
  /**
   * `cpuMs`: CPU time the run's isolate used (isolated-vm's count), what usage bills as sandbox CPU.
   * `held`: the host makes its next isolate only at the engine's `prepare` (or a run's arrival).
   */
  | ({ t: 'done'; cpuMs?: number; held?: true } & HostDone);

const LEVELS = new Set(['log', 'info', 'warn', 'error', 'debug']);
const KINDS = new Set<string>(FAILURE_KINDS);

/** Checks a message from a host; returns it typed, or a reason it is malformed. */
export function checkFromHost(m: unknown): { ok: true; message: FromHost } | { ok: false; reason: string } {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return { ok: false, reason: 'not an object' };
  const o = m as Record<string, unknown>;
  switch (o.t) {
    case 'ready':
      if (typeof o.pid !== 'number') break;
      return { ok: true, message: o as FromHost };
    case 'logs': {
      if (!Array.isArray(o.lines)) break;
      if (o.truncated !== undefined && o.truncated !== true) break;
      for (const line of o.lines) {
        if (
          !Array.isArray(line) ||
          line.length !== 2 ||
          !LEVELS.has(line[0]) ||
          typeof line[1] !== 'string'
        ) {
          return { ok: false, reason: 'bad log line' };
        }
      }
      return { ok: true, message: o as FromHost };
    }
    case 'turn':
      return { ok: true, message: { t: 'turn' } };
    case 'call':
      if (
        !Number.isSafeInteger(o.id) ||
        (o.id as number) < 0 ||
        typeof o.binding !== 'string' ||
        typeof o.argsJson !== 'string'
      ) {
        break;
      }
      return { ok: true, message: o as FromHost };
    case 'done':
      if (o.cpuMs !== undefined && (typeof o.cpuMs !== 'number' || !(o.cpuMs >= 0))) break;
      if (o.held !== undefined && o.held !== true) break;
      if (o.status === 'completed' && (o.valueJson === undefined || typeof o.valueJson === 'string')) {
        return { ok: true, message: o as FromHost };
      }
      if (o.status === 'failed' && KINDS.has(o.kind as string) && typeof o.message === 'string') {
        return { ok: true, message: o as FromHost };
      }
      break;
  }
  return { ok: false, reason: `unexpected message ${JSON.stringify(o.t ?? null).slice(0, 40)}` };
}
