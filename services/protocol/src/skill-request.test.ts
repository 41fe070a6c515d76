import { describe, expect, it } from 'vitest';
import { parseSkillRequest } from './skill-request.ts';

describe('parseSkillRequest', () => {
  it('validates requests with clear refusals', () => {
    expect(parseSkillRequest({ language: 'python', code: 'x' })).toEqual({
      ok: true,
      value: { language: 'python', code: 'x' },
    });
    const bad = (b: unknown) => {
      const r = parseSkillRequest(b);
      return r.ok ? 'ok' : r.message;
    };
    expect(bad({ language: 'ruby', code: '' })).toBe(
      'invalid language: expected one of python, javascript, bash',
    );
    expect(bad({ language: 'bash' })).toBe('invalid code: expected a string');
    expect(bad({ language: 'bash', code: '', timeout: 0 })).toBe(
      'invalid timeout: expected a positive number of milliseconds',
    );
    expect(bad({ language: 'bash', code: '', timeout: 120001 })).toBe(
      'invalid timeout: the maximum is 120000 ms',
    );
    expect(bad({ language: 'bash', code: '', timeout: '5' })).toBe(
      'invalid timeout: expected a positive number of milliseconds',
    );
    expect(bad([])).toBe('invalid request: expected a JSON object');
  });
});
