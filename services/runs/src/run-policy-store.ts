/**
 * A tenant's run policy: which contract's rules its runs follow when a request names no `style`.
 * `run_code` (the default, document 000): a call needing a decision holds in place and waiting
 * counts (elapsed time). `code-mode` (document 003): the call stops the run and it is replayed after
 * the answer; the time budget excludes waiting for App calls. `approval` / `timeBudget` override one
 * rule each for runs of the tenant's style; a request's own `approval` wins over both. Resolved
 * once when a run is accepted and stored on the run, so every execution follows the same rules.
 */

import {
  APPROVAL_MODES,
  type ApprovalMode,
  RUN_STYLES,
  type RunStyle,
  resolveApproval,
  resolveTimeBudget,
  TIME_BUDGETS,
  type TimeBudget,
} from '@islet/protocol';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { journalKeys } from './keys.ts';

export const runPolicySchema = z
  .object({
    style: z.enum(RUN_STYLES).default('run_code'),
    approval: z.enum(APPROVAL_MODES).optional(),
    timeBudget: z.enum(TIME_BUDGETS).optional(),
    /**
     * Four-eyes: the API key that submitted a run with `sandbox_permissions` cannot approve that
     * run's decisions (denying stays allowed). Default off.
     */
    fourEyes: z.boolean().optional(),
  })
  .strict();

export type RunPolicy = z.infer<typeof runPolicySchema>;

interface EffectiveRunPolicy {
  style: RunStyle;
  approval: ApprovalMode;
  timeBudget: TimeBudget;
  fourEyes: boolean;
}

/**
 * The rules a new run of a tenant with `policy` follows; `requested` is the request's own
 * `approval`, `style` its own style. The tenant's overrides apply only to runs of the tenant's style.
 */
export function effectiveRunPolicy(
  policy: RunPolicy,
  requested?: ApprovalMode,
  style?: RunStyle,
): EffectiveRunPolicy {
  const own = style === undefined || style === policy.style;
  const runStyle = style ?? policy.style;
  return {
    style: runStyle,
    approval: resolveApproval(runStyle, requested, own ? policy.approval : undefined),
    timeBudget: resolveTimeBudget(runStyle, own ? policy.timeBudget : undefined),
    fourEyes: policy.fourEyes ?? false,
  };
}

export function createRunPolicyStore(redis: Redis, keyPrefix = 'islet:') {
  const key = journalKeys(keyPrefix).runPolicy;
  return {
    async get(tenant: string): Promise<RunPolicy> {
      const raw = await redis.get(key(tenant));
      const parsed = runPolicySchema.safeParse(raw ? JSON.parse(raw) : {});
      return parsed.success ? parsed.data : { style: 'run_code' };
    },
    async set(tenant: string, policy: RunPolicy): Promise<RunPolicy> {
      const clean = runPolicySchema.parse(policy);
      await redis.set(key(tenant), JSON.stringify(clean));
      return clean;
    },
    /** The tenant's rules for a new run (`effectiveRunPolicy` of its policy). */
    async effective(tenant: string, requested?: ApprovalMode, style?: RunStyle): Promise<EffectiveRunPolicy> {
      return effectiveRunPolicy(await this.get(tenant), requested, style);
    },
  };
}

export type RunPolicyStore = ReturnType<typeof createRunPolicyStore>;
