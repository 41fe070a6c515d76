import { describe, expect, it } from 'vitest';
import { closestField, unknownFieldsMessage, unknownFieldsOf } from './unknown-fields.ts';

const RUN = ['code', 'description', 'timeoutMs', 'sandbox_permissions', 'justification', 'sessionId'];

describe('closestField', () => {
  it('finds the field meant by a prefix, a case or separator change, or a small typo', () => {
    expect(closestField('timeout', RUN)).toBe('timeoutMs');
    expect(closestField('timeout_ms', RUN)).toBe('timeoutMs');
    expect(closestField('sandboxPermissions', RUN)).toBe('sandbox_permissions');
    expect(closestField('session_id', RUN)).toBe('sessionId');
    expect(closestField('descripton', RUN)).toBe('description');
    expect(closestField('session', RUN)).toBe('sessionId');
  });

  it('suggests nothing when nothing is close', () => {
    expect(closestField('language', RUN)).toBeUndefined();
    expect(closestField('mode', RUN)).toBeUndefined();
    expect(closestField('x', RUN)).toBeUndefined();
  });
});

describe('unknownFieldsOf', () => {
  it('names each unknown field with its suggestion or hint, and nothing for known ones', () => {
    const fields = unknownFieldsOf({ code: 'x', timeout: 5, language: 'python', zzz: 1 }, RUN, {
      language: 'language is the skill’s field',
    });
    expect(fields).toEqual([
      { path: 'timeout', suggestion: 'timeoutMs' },
      { path: 'language', hint: 'language is the skill’s field' },
      { path: 'zzz' },
    ]);
    expect(unknownFieldsMessage(fields)).toBe(
      'unknown field "timeout" (did you mean "timeoutMs"?); unknown field "language": language is the skill’s field; unknown field "zzz"',
    );
    expect(unknownFieldsOf({ code: 'x' }, RUN)).toEqual([]);
    expect(unknownFieldsOf({ toString: 1 }, RUN, {})).toEqual([{ path: 'toString' }]);
  });
});
