import { describe, expect, it } from 'vitest';
import { validateBindingNames } from './names.ts';

// validateBindingNames remembers names it found valid; a name's answer must not depend on
// what was checked before it.
describe('validateBindingNames, asked again', () => {
  it('gives the same answer the second time, valid or not', () => {
    const lists = [
      ['work_calendar.list_events', 'search'],
      ['search', 'lambda'],
      ['console'],
      ['notes.read_note', 'apps.call'],
      ['a.b.c'],
      ['ok_tool'],
    ];
    const first = lists.map((l) => validateBindingNames(l));
    const second = lists.map((l) => validateBindingNames(l));
    expect(second).toEqual(first);
    expect(first).toEqual([
      undefined,
      'invalid binding name: lambda (reserved by Python)',
      'invalid binding name: console (kept by the run environment)',
      'invalid binding name: apps.call (kept by the run environment)',
      'invalid binding name: a.b.c (not a plain identifier)',
      undefined,
    ]);
  });

  it('stays bounded: past its limit it forgets and checks again', () => {
    for (let i = 0; i < 10_050; i++) expect(validateBindingNames([`tool_${i}`])).toBeUndefined();
    expect(validateBindingNames(['tool_1', 'lambda'])).toBe(
      'invalid binding name: lambda (reserved by Python)',
    );
  });
});
