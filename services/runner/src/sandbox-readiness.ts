/**
 * Whether a runner may say it is ready, given what its host enforces per sandbox mode and what the
 * deployment requires (ISLET_SANDBOX_ENFORCEMENT_REQUIRED). A runner below the requirement would
 * fail every run `sandbox-unavailable`; answering NotReady makes that visible where operators look
 * (a rollout onto such nodes stalls, the pod is flagged) instead of only in failed runs.
 * `partial` is the explicit opt-out: such a runner is ready with partial enforcement.
 */
type EnforcementLevel = 'full' | 'partial' | 'none';

interface SandboxReadiness {
  ready: boolean;
  /** Why not, naming the modes and their levels (absent when ready). */
  reason?: string;
}

const RANK: Record<EnforcementLevel, number> = { none: 0, partial: 1, full: 2 };

export function sandboxReadiness(
  required: 'full' | 'partial',
  facts: Iterable<{ mode: string; enforcement: EnforcementLevel }>,
): SandboxReadiness {
  const below = [...facts].filter((f) => RANK[f.enforcement] < RANK[required]);
  if (below.length === 0) return { ready: true };
  const modes = below.map((f) => `${f.mode}: ${f.enforcement}`).join(', ');
  return {
    ready: false,
    reason: `sandbox enforcement below the required ${required} (${modes}); set ISLET_SANDBOX_ENFORCEMENT_REQUIRED=partial to accept it`,
  };
}
