/**
 * A watch that survives: list, then watch from the list's resourceVersion; when the stream ends
 * (API server timeout, load balancer, crash) resume from the last resourceVersion seen; when the
 * server says that version is gone (410 Expired) list again. Failures back off exponentially.
 */
import type { Watch } from '@kubernetes/client-node';
import { Backoff, type BackoffOptions } from './backoff.ts';
import type { Listed } from './kube.ts';

type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface RestartableWatchOptions<T> {
  watch: Pick<Watch, 'watch'>;
  /** API path of the collection, e.g. /apis/apps/v1/namespaces/x/deployments. */
  path: string;
  labelSelector?: string;
  list: () => Promise<Listed<T>>;
  /** Called after every (re)list with the full current state. */
  onSync: (items: T[]) => void;
  onEvent: (type: WatchEventType, obj: T) => void;
  /** Called each time the watch must be re-established (for metrics and logs). */
  onRestart?: (reason: 'closed' | 'error' | 'expired', err?: unknown) => void;
  backoff?: BackoffOptions;
}

interface WatchObject {
  metadata?: { resourceVersion?: string };
  code?: number;
}

export class RestartableWatch<T extends WatchObject> {
  private readonly opts: RestartableWatchOptions<T>;
  private readonly backoff: Backoff;
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private generation = 0;

  constructor(opts: RestartableWatchOptions<T>) {
    this.opts = opts;
    this.backoff = new Backoff(opts.backoff);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.relist();
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.abort?.abort();
    this.abort = undefined;
  }

  private schedule(fn: () => Promise<void>, delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void fn(), delayMs);
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    try {
      const listed = await this.opts.list();
      if (this.stopped) return;
      this.resourceVersion = listed.resourceVersion;
      this.opts.onSync(listed.items);
      await this.watchFrom();
    } catch (err) {
      this.opts.onRestart?.('error', err);
      this.schedule(() => this.relist(), this.backoff.next());
    }
  }

  private async watchFrom(): Promise<void> {
    const gen = ++this.generation;
    let expired = false;
    const query: Record<string, string | boolean | undefined> = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      labelSelector: this.opts.labelSelector,
    };
    const onEvent = (type: string, obj: T) => {
      if (gen !== this.generation) return;
      if (type === 'ERROR') {
        // A Status object: 410 means our resourceVersion was compacted away: list again.
        expired = obj?.code === 410;
        this.abort?.abort();
        return;
      }
      const rv = obj?.metadata?.resourceVersion;
      if (rv) this.resourceVersion = rv;
      this.backoff.reset();
      if (type === 'BOOKMARK') return;
      if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') this.opts.onEvent(type, obj);
    };
    const onDone = (err: unknown) => {
      if (gen !== this.generation || this.stopped) return;
      this.generation++;
      if (expired) {
        this.opts.onRestart?.('expired');
        this.schedule(() => this.relist(), 0);
      } else if (err) {
        this.opts.onRestart?.('error', err);
        // An HTTP 410 on the watch request itself also means "list again".
        const code = (err as { statusCode?: number }).statusCode;
        const next = code === 410 ? () => this.relist() : () => this.watchFrom();
        this.schedule(next, this.backoff.next());
      } else {
        // A clean close is normal (server-side timeout); resume at once from where we were.
        this.opts.onRestart?.('closed');
        this.schedule(() => this.watchFrom(), Math.min(this.backoff.next(), 1000));
      }
    };
    this.abort = await this.opts.watch.watch(this.opts.path, query, onEvent, onDone);
  }
}
