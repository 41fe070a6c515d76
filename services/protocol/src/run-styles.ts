/**
 * The two run styles, their approval modes and the run_code limits: one table each, read by the
 * gateway (acceptance, OpenAPI, README), the run package (policy defaults) and the engine (its
 * defaults). 000 = the run_code tool document, 003 = Code Mode.
 */
import type { TimeBudget } from './kinds.ts';

/** `code-mode`: an Agent's Code Mode run (`POST /v1/runs` with connections); `run_code`: the tool/skill style. */
export const RUN_STYLES = ['code-mode', 'run_code'] as const;
export type RunStyle = (typeof RUN_STYLES)[number];

/** How a call needing a decision waits: `hold` in place inside the budget, or `stop` and replay. */
export const APPROVAL_MODES = ['hold', 'stop'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** The run_code document's limits (000). A setup may lower the time ceiling, never raise it. */
export const RUN_CODE_LIMITS = {
  /** Time budget when the request names none, ms. */
  defaultTimeoutMs: 120_000,
  /** Ceiling of the time budget, ms; a longer request is capped, not refused. */
  maxTimeoutMs: 600_000,
  /** Isolate heap ceiling, MiB. */
  memoryMb: 512,
  /** Cap shared by the log lines and the returned value, bytes (64 MiB). */
  outputBytes: 67_108_864,
} as const;

/**
 * A run_code run's time budget: `requested` (undefined: the default) capped at the ceiling, or at
 * a setup's lower `ceilingMs`. The one place a run_code `timeoutMs` is defaulted and capped.
 */
export function runCodeTimeoutMs(requested: number | undefined, ceilingMs?: number): number {
  const ceiling = Math.min(RUN_CODE_LIMITS.maxTimeoutMs, ceilingMs ?? RUN_CODE_LIMITS.maxTimeoutMs);
  return Math.min(requested ?? RUN_CODE_LIMITS.defaultTimeoutMs, ceiling);
}

/** What a style brings when neither the request nor the tenant's run policy says otherwise. */
interface RunStyleDefinition {
  approval: ApprovalMode;
  timeBudget: TimeBudget;
}

const RUN_STYLE_DEFINITIONS: Record<RunStyle, RunStyleDefinition> = {
  run_code: { approval: 'hold', timeBudget: 'elapsed' },
  'code-mode': { approval: 'stop', timeBudget: 'excluding-binding-waits' },
};

/** The approval mode a run gets: the request's, else the tenant's, else its style's. */
export function resolveApproval(
  style: RunStyle,
  request?: ApprovalMode,
  tenant?: ApprovalMode,
): ApprovalMode {
  return request ?? tenant ?? RUN_STYLE_DEFINITIONS[style].approval;
}

/** The time accounting a run gets: the tenant's, else its style's. */
export function resolveTimeBudget(style: RunStyle, tenant?: TimeBudget): TimeBudget {
  return tenant ?? RUN_STYLE_DEFINITIONS[style].timeBudget;
}

/** One rule of the two styles side by side, with the document it comes from. */
interface StyleRule {
  rule: string;
  runCode: string;
  codeMode: string;
}

const L = RUN_CODE_LIMITS;

/** The styles' rules; the OpenAPI description renders this table, README.md carries the same. */
export const RUN_STYLE_RULES: readonly StyleRule[] = [
  { rule: 'chosen by', runCode: '`style: "run_code"` (the default)', codeMode: '`style: "code-mode"`' },
  { rule: 'required fields', runCode: '`code`, `description` (000)', codeMode: '`code`, `description`' },
  {
    rule: 'time budget',
    runCode: `\`timeoutMs\`, default ${L.defaultTimeoutMs}, ceiling ${L.maxTimeoutMs} or lower (000)`,
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
    runCode: `${L.memoryMb} MiB heap (000)`,
    codeMode: 'platform setting `codeMode.memoryMb` (003)',
  },
  {
    rule: 'output',
    runCode: `${L.outputBytes} bytes shared by lines and value; over it: \`output-limit\`, fitting part kept (000)`,
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
