/**
 * The two run styles side by side, with the document each rule comes from (000 = the run_code
 * tool, 003 = Code Mode). The OpenAPI description renders this table; README.md carries the same.
 */
export interface StyleRule {
  rule: string;
  runCode: string;
  codeMode: string;
}

export const RUN_STYLE_RULES: readonly StyleRule[] = [
  { rule: 'chosen by', runCode: '`style: "run_code"` (the default)', codeMode: '`style: "code-mode"`' },
  { rule: 'required fields', runCode: '`code`, `description` (000)', codeMode: '`code`, `description`' },
  {
    rule: 'time budget',
    runCode: '`timeoutMs`, default 120000, ceiling 600000 or lower (000)',
    codeMode: 'platform setting `codeMode.timeoutMs` (003)',
  },
  {
    rule: 'time counted',
    runCode: 'elapsed, App calls and decisions included (000)',
    codeMode: 'waiting for App calls excluded (003)',
  },
  {
    rule: 'no deadline',
    runCode: '`timeoutMs: null`, `workflows` scope only (000)',
    codeMode: 'never',
  },
  {
    rule: 'memory',
    runCode: '512 MiB heap (000)',
    codeMode: 'platform setting `codeMode.memoryMb` (003)',
  },
  {
    rule: 'output',
    runCode: '67108864 bytes shared by lines and value; over it: `output-limit`, fitting part kept (000)',
    codeMode:
      '`codeMode.outputBytes`: logs past it are cut and the run goes on; a larger value is `OutputTooLarge` (003)',
  },
  {
    rule: 'a call needing a decision',
    runCode: 'holds in place inside the budget (000)',
    codeMode: 'stops the run; replayed from the top after the decision (003)',
  },
  {
    rule: 'files and sandbox modes',
    runCode: '`apps.files.*`, `sandbox_permissions` + `justification` (000)',
    codeMode: 'none: "no network, no files" (003)',
  },
  {
    rule: 'Apps',
    runCode: '`connections`, else every App of the tenant',
    codeMode: '`connections`, else every App of the tenant (the Apps of the Turn, 003)',
  },
  {
    rule: 'switched off',
    runCode: 'never by Code Mode settings',
    codeMode: '`codeMode.enabled` (off on a fresh install, 003): `Unavailable`',
  },
  {
    rule: 'limits fixed',
    runCode: 'at acceptance (`limits` in the record)',
    codeMode: 'at acceptance, with `limits.settingsVersion`; every replay uses them (003)',
  },
];

export function runStyleTableMarkdown(): string {
  const rows = RUN_STYLE_RULES.map((r) => `| ${r.rule} | ${r.runCode} | ${r.codeMode} |`);
  return ['| | run_code (000) | code-mode (003) |', '| --- | --- | --- |', ...rows].join('\n');
}
