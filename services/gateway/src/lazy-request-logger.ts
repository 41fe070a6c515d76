import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;

type Log = (...args: unknown[]) => void;

/**
 * A request's logger (`request.log`) whose pino child, the one that carries the request id, is made
 * at its first use. Fastify asks for one on every request; the gateway logs on few of them
 * (request logging is off, see app.ts), and making a pino child serializes and redacts its bindings
 * each time: per-submit work for a logger that is almost never written to. A line logged through
 * it is the child's line, bindings and options included.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  /** Children made so far by every LazyRequestLogger (the tests read it). */
  static made = 0;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #real(): FastifyBaseLogger {
    if (this.#child === undefined) {
      LazyRequestLogger.made++;
      this.#child = this.#parent.child(this.#bindings, this.#options);
    }
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#real.level = level;
  }

  fatal(...args: unknown[]): void {
    const real = this.#real;
    (real.fatal as Log).apply(real, args);
  }

  error(...args: unknown[]): void {
    const real = this.#real;
    (real.error as Log).apply(real, args);
  }

  warn(...args: unknown[]): void {
    const real = this.#real;
    (real.warn as Log).apply(real, args);
  }

  info(...args: unknown[]): void {
    const real = this.#real;
    (real.info as Log).apply(real, args);
  }

  debug(...args: unknown[]): void {
    const real = this.#real;
    (real.debug as Log).apply(real, args);
  }

  trace(...args: unknown[]): void {
    const real = this.#real;
    (real.trace as Log).apply(real, args);
  }

  silent(...args: unknown[]): void {
    const real = this.#real;
    (real.silent as Log).apply(real, args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a LazyRequestLogger instead of a pino child per request. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings, options);
}
