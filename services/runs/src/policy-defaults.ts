/**
 * Which approval style and time budget apply to a run. The two contracts differ: the run_code
 * tool holds a call that needs an answer in place and counts that wait in its elapsed budget;
 * Code Mode stops the program at the call and replays it after the decision, and its `timeoutMs`
 * excludes time waiting for App calls. Islet supports both; a request may choose, else the
 * tenant's setting, else the default of the request's style.
 */
import type { TimeBudget } from '@islet/protocol';
import type { ApprovalMode } from './decision-types.ts';

/** `code-mode`: an Agent's Code Mode run (`POST /v1/runs` with connections); `run_code`: the tool/skill style. */
export const RUN_STYLES = ['code-mode', 'run_code'] as const;
export type RunStyle = (typeof RUN_STYLES)[number];

const DEFAULT_APPROVAL: Record<RunStyle, ApprovalMode> = { 'code-mode': 'stop', run_code: 'hold' };
const DEFAULT_TIME_BUDGET: Record<RunStyle, TimeBudget> = {
  'code-mode': 'excluding-binding-waits',
  run_code: 'elapsed',
};

export function resolveApproval(
  style: RunStyle,
  request?: ApprovalMode,
  tenant?: ApprovalMode,
): ApprovalMode {
  return request ?? tenant ?? DEFAULT_APPROVAL[style];
}

export function resolveTimeBudget(style: RunStyle, tenant?: TimeBudget): TimeBudget {
  return tenant ?? DEFAULT_TIME_BUDGET[style];
}
