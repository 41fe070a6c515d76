/**
 * A run's resident-memory guard (run.ts): reads the host's resident size from outside the host every
 * RESIDENT_GUARD_MS, so it holds while the host's thread runs the program, and reports the run out
 * of memory once it passes its bound (limits.ts `hostResidentLimitBytes`).
 */
import { heapLimitMessage, hostResidentLimitBytes } from './limits.ts';
import { RESIDENT_GUARD_MS } from './run-params.ts';
import type { RunFailure } from './types.ts';

export class ResidentGuard {
  private readonly memoryMb: number;
  private readonly readResident: () => number | undefined;
  private readonly onOver: (failure: RunFailure) => void;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    memoryMb: number,
    readResident: () => number | undefined,
    onOver: (failure: RunFailure) => void,
  ) {
    this.memoryMb = memoryMb;
    this.readResident = readResident;
    this.onOver = onOver;
  }

  start(): void {
    const limit = hostResidentLimitBytes(this.memoryMb);
    const check = () => {
      if (this.stopped) return;
      const resident = this.readResident();
      if (resident !== undefined && resident > limit) {
        this.onOver({ kind: 'worker-exit', cause: 'memory', message: heapLimitMessage(this.memoryMb) });
        return;
      }
      this.timer = setTimeout(check, RESIDENT_GUARD_MS);
    };
    this.timer = setTimeout(check, RESIDENT_GUARD_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
