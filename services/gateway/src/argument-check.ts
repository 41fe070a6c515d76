/**
 * A tool call's arguments checked against the tool's `inputSchema` (JSON Schema) before anything
 * is sent: a call that does not fit fails in the program with the field named, and the App never
 * sees it (`pattern` is not checked here: see below). Compiled validators are kept per schema text (bounded), so a program's many calls to
 * one tool compile once. A schema Ajv cannot compile checks nothing (the App decides, as before).
 */
import { BoundedMap } from '@islet/core';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

const MAX_CACHED = 500;
const MAX_REPORTED = 5;

interface ArgumentProblem {
  path: string;
  message: string;
}

export function createArgumentCheck() {
  const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
  // A tenant's `pattern` would run a tenant's regular expression on the gateway's thread over a
  // program's strings (catastrophic backtracking): patterns are left to the App.
  ajv.removeKeyword('pattern');
  const compiled = new BoundedMap<string, ValidateFunction | null>(MAX_CACHED);
  // By the schema object too: a connection read from the gateway's cache hands every call the same
  // tool object, and keying by text stringified the whole schema each call (a tool's schema is
  // often kilobytes). The text key still finds a validator for an equal schema read afresh.
  const bySchema = new WeakMap<object, ValidateFunction | null>();

  function validatorFor(schema: Record<string, unknown>): ValidateFunction | null {
    const known = bySchema.get(schema);
    if (known !== undefined) return known;
    const key = JSON.stringify(schema);
    let v = compiled.get(key);
    if (v === undefined) {
      try {
        v = ajv.compile(schema);
      } catch {
        v = null;
      }
      compiled.set(key, v);
    }
    bySchema.set(schema, v);
    return v;
  }

  /** Undefined when the arguments fit (or the schema cannot be used); else what is wrong, by field. */
  return function check(schema: Record<string, unknown>, args: unknown): ArgumentProblem[] | undefined {
    const validate = validatorFor(schema);
    // A call without arguments (`apps.x.y()`) is checked as `{}`: its missing fields are named.
    if (!validate || validate(args ?? {})) return undefined;
    return (validate.errors ?? []).slice(0, MAX_REPORTED).map(describe);
  };
}

function describe(e: ErrorObject): ArgumentProblem {
  const at = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const field = (extra?: string) => ['arguments', ...at, ...(extra ? [extra] : [])].join('.');
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required')
    return { path: field(String(params.missingProperty)), message: 'is required' };
  if (e.keyword === 'additionalProperties')
    return { path: field(String(params.additionalProperty)), message: 'is not a field of this tool' };
  return { path: field(), message: e.message ?? 'does not fit the schema' };
}

/** `invalid arguments for apps.x.y: arguments.amountCents must be integer; arguments.customer is required`. */
export function argumentProblemMessage(binding: string, problems: ArgumentProblem[]): string {
  return `invalid arguments for apps.${binding}: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`;
}
