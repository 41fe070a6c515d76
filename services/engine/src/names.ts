/**
 * Binding names. A program reaches `connection.capability` as `apps.connection.capability` and a
 * flat tool `name` as a global. Every name part must be a plain ASCII identifier that neither
 * JavaScript nor Python reserves; flat names must also not be a name the run's environment keeps.
 */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** JavaScript reserved words, strict-mode reserved words and literals. */
const JS_RESERVED: ReadonlySet<string> = new Set(
  (
    'await break case catch class const continue debugger default delete do else enum export extends false ' +
    'finally for function if import in instanceof new null return super switch this throw true try typeof ' +
    'var void while with yield let static implements interface package private protected public ' +
    'arguments eval'
  ).split(' '),
);

/** Python keywords (the hard ones; soft keywords such as `match` and `type` are ordinary names). */
const PYTHON_RESERVED: ReadonlySet<string> = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for ' +
    'from global if import in is lambda nonlocal not or pass raise return try while with yield'
  ).split(' '),
);

/**
 * Names the run's environment keeps: the isolate's standard globals, the program's own
 * environment (`apps`, `console`) and host names a program must never see shadowed or faked.
 */
const ENVIRONMENT_KEPT: ReadonlySet<string> = new Set(
  (
    'apps console globalThis global self window undefined NaN Infinity ' +
    'Object Function Array Number parseFloat parseInt Boolean String Symbol Date Promise RegExp ' +
    'Error AggregateError EvalError RangeError ReferenceError SyntaxError TypeError URIError SuppressedError ' +
    'JSON Math Intl ArrayBuffer Atomics SharedArrayBuffer WebAssembly DataView Map Set WeakMap WeakSet ' +
    'Uint8Array Int8Array Uint16Array Int16Array Uint32Array Int32Array Float16Array Float32Array Float64Array ' +
    'Uint8ClampedArray BigUint64Array BigInt64Array BigInt Iterator Proxy Reflect FinalizationRegistry WeakRef ' +
    'DisposableStack AsyncDisposableStack decodeURI decodeURIComponent encodeURI encodeURIComponent escape ' +
    'unescape isFinite isNaN ' +
    'fetch require process module exports Buffer setTimeout setInterval setImmediate clearTimeout ' +
    'clearInterval clearImmediate queueMicrotask structuredClone performance crypto navigator Temporal ' +
    '__proto__ constructor prototype toString valueOf hasOwnProperty'
  ).split(' '),
);

/** Names kept inside `apps`: a connection cannot be called `call`. */
const APPS_KEPT: ReadonlySet<string> = new Set(['call', '__proto__', 'constructor', 'prototype']);

function partProblem(part: string): string | undefined {
  if (!IDENTIFIER.test(part)) return 'not a plain identifier';
  if (JS_RESERVED.has(part)) return 'reserved by JavaScript';
  if (PYTHON_RESERVED.has(part)) return 'reserved by Python';
  if (part.startsWith('__islet')) return 'kept by the run environment';
  return undefined;
}

/** Why `name` cannot be a binding, or undefined when it can. */
export function bindingNameProblem(name: string): string | undefined {
  const parts = name.split('.');
  if (parts.length > 2) return 'not a plain identifier';
  for (const part of parts) {
    const problem = partProblem(part);
    if (problem) return problem;
  }
  if (parts.length === 1 && ENVIRONMENT_KEPT.has(name)) return 'kept by the run environment';
  if (parts.length === 2 && (APPS_KEPT.has(parts[0]!) || APPS_KEPT.has(parts[1]!))) {
    return 'kept by the run environment';
  }
  return undefined;
}

/**
 * Checks binding names before a run starts. Returns the refusal for the first bad name, e.g.
 * `invalid binding name: lambda (reserved by Python)`, or undefined when all are valid.
 */
export function validateBindingNames(names: readonly string[]): string | undefined {
  // Indexed: every run's names, and a `for … of` the JIT has not optimized allocates an iterator
  // result a name.
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (typeof name !== 'string') return `invalid binding name: ${String(name)} (not a plain identifier)`;
    if (VALID_NAMES.has(name)) continue;
    const problem = bindingNameProblem(name);
    if (problem) return `invalid binding name: ${name} (${problem})`;
    if (VALID_NAMES.size >= VALID_NAMES_MAX) VALID_NAMES.clear();
    VALID_NAMES.add(name);
  }
  return undefined;
}

/**
 * Names found valid before: a runner checks the same few names (a tenant's Apps' capabilities)
 * before every run, each a regex and four set lookups. Only valid names are kept (a bad one is
 * checked again and refused again); bounded, cleared when full.
 */
const VALID_NAMES = new Set<string>();
const VALID_NAMES_MAX = 10_000;
