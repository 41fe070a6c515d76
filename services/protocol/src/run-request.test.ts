import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseRunCodeRequest, RunCodeRequestSchema, requestTimeoutMs } from './run-request.ts';

const base = { code: 'return 1', description: 'Add one and one together' };

function refusal(input: unknown, caps = {}): string | undefined {
  const r = parseRunCodeRequest(input, caps);
  return r.ok ? undefined : r.refusal;
}

describe('run_code request refusals (run_code contract)', () => {
  it('accepts a minimal request', () => {
    expect(parseRunCodeRequest(base)).toEqual({ ok: true, value: base });
  });

  it('refuses a missing or empty description', () => {
    expect(refusal({ code: 'return 1' })).toBe('invalid description: expected a non-empty string');
    expect(refusal({ ...base, description: '' })).toBe('invalid description: expected a non-empty string');
    expect(refusal({ ...base, description: '   ' })).toBe('invalid description: expected a non-empty string');
    expect(refusal({ ...base, description: 7 })).toBe('invalid description: expected a non-empty string');
  });

  it('refuses a missing program', () => {
    expect(refusal({ description: 'x' })).toBe('invalid code: expected a non-empty string');
    expect(refusal(null)).toBe('invalid code: expected a non-empty string');
  });

  it('refuses a timeoutMs that is not a positive finite number; zero does not switch the deadline off', () => {
    for (const t of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '5000', null, true]) {
      expect(refusal({ ...base, timeoutMs: t })).toBe('invalid timeoutMs: expected a positive finite number');
    }
  });

  it('caps a longer timeoutMs at 600000 instead of refusing it, and applies a lower ceiling of the setup', () => {
    const r = parseRunCodeRequest({ ...base, timeoutMs: 10_000_000 });
    expect(r.ok && r.value.timeoutMs).toBe(600_000);
    const low = parseRunCodeRequest({ ...base, timeoutMs: 500_000 }, { maxTimeoutMs: 300_000 });
    expect(low.ok && low.value.timeoutMs).toBe(300_000);
    expect(requestTimeoutMs({})).toBe(120_000);
    expect(requestTimeoutMs({ timeoutMs: 5000 })).toBe(5000);
  });

  it('refuses an escalation without a justification, and a justification without an escalation', () => {
    expect(refusal({ ...base, sandbox_permissions: 'workspace-write' })).toBe(
      'invalid escalation: sandbox_permissions requires a justification',
    );
    expect(refusal({ ...base, justification: 'Needs to write the report.' })).toBe(
      'invalid escalation: justification is only valid together with sandbox_permissions',
    );
    expect(refusal({ ...base, justification: '' })).toBe(
      'invalid escalation: justification is only valid together with sandbox_permissions',
    );
  });

  it('refuses an empty justification', () => {
    for (const j of ['', '  ', 3]) {
      expect(refusal({ ...base, sandbox_permissions: 'workspace-write', justification: j })).toBe(
        'invalid justification: expected a non-empty sentence',
      );
    }
  });

  it('refuses an unknown sandbox_permissions value with a clear message', () => {
    expect(refusal({ ...base, sandbox_permissions: 'root', justification: 'Because.' })).toBe(
      'invalid sandbox_permissions: expected one of read-only, workspace-write, danger-full-access',
    );
  });

  it('accepts an escalation with its reason', () => {
    const input = {
      ...base,
      sandbox_permissions: 'danger-full-access',
      justification: 'Writes the build output.',
    };
    expect(parseRunCodeRequest(input)).toEqual({ ok: true, value: input });
  });

  it('refuses controls the runtime cannot honour', () => {
    expect(refusal({ ...base, timeoutMs: 5000 }, { timeoutMs: false })).toBe(
      'timeoutMs is not available for this PTC runtime',
    );
    expect(
      refusal(
        { ...base, sandbox_permissions: 'workspace-write', justification: 'x.' },
        { sandboxPermissions: false },
      ),
    ).toBe('sandbox_permissions is not available for this PTC runtime');
    // Omitted controls are fine on such a runtime.
    expect(parseRunCodeRequest(base, { timeoutMs: false, sandboxPermissions: false }).ok).toBe(true);
  });

  it('can be extended with service fields and still reports the contract refusals first', () => {
    const Extended = RunCodeRequestSchema.extend({ sessionId: z.string({ error: 'invalid sessionId' }) });
    expect(parseRunCodeRequest({ ...base, sessionId: 's1' }, {}, Extended)).toEqual({
      ok: true,
      value: { ...base, sessionId: 's1' },
    });
    const r = parseRunCodeRequest({ code: 'x' }, {}, Extended);
    expect(r).toEqual({ ok: false, refusal: 'invalid description: expected a non-empty string' });
    expect(parseRunCodeRequest(base, {}, Extended)).toEqual({ ok: false, refusal: 'invalid sessionId' });
  });
});

// parseRunCodeRequest answers a request whose fields all pass without zod's parse: its value must
// be the schema's exactly (keys, their order, undefined ones kept), and every refusal the schema's.
describe('parseRunCodeRequest without the schema parse', () => {
  const viaSchema = (input: Record<string, unknown>) => {
    const parsed = RunCodeRequestSchema.safeParse(input);
    return parsed.success ? parsed.data : parsed.error.issues.map((i) => i.message);
  };
  const requests: Record<string, unknown>[] = [
    { code: 'x', description: 'd' },
    { description: 'd', code: 'x' },
    {
      code: 'x',
      description: 'd',
      timeoutMs: undefined,
      sandbox_permissions: undefined,
      justification: undefined,
    },
    { code: 'x', description: 'd', timeoutMs: 5000 },
    { code: 'x', description: 'd', timeoutMs: 0 },
    { code: 'x', description: 'd', timeoutMs: Number.NaN },
    { code: 'x', description: 'd', timeoutMs: Number.POSITIVE_INFINITY },
    { code: 'x', description: 'd', timeoutMs: '5' },
    { code: 'x', description: 'd', sandbox_permissions: 'workspace-write', justification: 'needs it' },
    { code: 'x', description: 'd', sandbox_permissions: 'nope', justification: 'j' },
    { code: 'x', description: 'd', justification: ' ' },
    { code: '  ', description: 'd' },
    { code: 'x', description: '' },
    { code: 1, description: 'd' },
    { description: 'd' },
    { code: 'x', description: 'd', other: 1 },
  ];
  it.each(requests.map((r) => [JSON.stringify(r), r]))('agrees with the schema: %s', (_, input) => {
    const ours = parseRunCodeRequest(input);
    const schema = viaSchema(input);
    if (ours.ok) {
      expect(Array.isArray(schema)).toBe(false);
      expect(Object.keys(ours.value)).toEqual(Object.keys(schema));
      expect(ours.value).toEqual(schema);
    }
    const viaExtended = parseRunCodeRequest(input, {}, RunCodeRequestSchema.extend({}));
    expect(ours).toEqual(viaExtended);
    if (ours.ok && viaExtended.ok) expect(Object.keys(ours.value)).toEqual(Object.keys(viaExtended.value));
  });
});
