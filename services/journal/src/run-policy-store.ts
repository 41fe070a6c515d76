/**
 * A tenant's run policy: which contract's rules its runs follow by default. `code-mode` (the
 * default): a call needing a decision stops the run and it is replayed after the answer; the time
 * budget excludes waiting for App calls. `run_code`: the call holds in place and waiting counts
 * (elapsed time). `approval` / `timeBudget` override one rule each; a request's own `approval`
 * wins over both. Resolved once when a run is accepted and stored on the run, so every
 * execution of the run follows the same rules.
 */
import { TIME_BUDGETS, type TimeBudget } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { APPROVAL_MODES, type ApprovalMode } from './decision-types.ts';
import { RUN_STYLES, type RunStyle, resolveApproval, resolveTimeBudget } from './policy-defaults.ts';

export const runPolicySchema = z
  .object({
    style: z.enum(RUN_STYLES).default('code-mode'),
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

export interface EffectiveRunPolicy {
  style: RunStyle;
  approval: ApprovalMode;
  timeBudget: TimeBudget;
  fourEyes: boolean;
}

export function createRunPolicyStore(redis: Redis, keyPrefix = 'islet:') {
  const key = (tenant: string) => `${keyPrefix}tenant:${tenant}:run-policy`;
  return {
    async get(tenant: string): Promise<RunPolicy> {
      const raw = await redis.get(key(tenant));
      const parsed = runPolicySchema.safeParse(raw ? JSON.parse(raw) : {});
      return parsed.success ? parsed.data : { style: 'code-mode' };
    },
    async set(tenant: string, policy: RunPolicy): Promise<RunPolicy> {
      const clean = runPolicySchema.parse(policy);
      await redis.set(key(tenant), JSON.stringify(clean));
      return clean;
    },
    /** The rules a new run of the tenant follows; `requested` is the request's own `approval`. */
    async effective(tenant: string, requested?: ApprovalMode): Promise<EffectiveRunPolicy> {
      const policy = await this.get(tenant);
      return {
        style: policy.style,
        approval: resolveApproval(policy.style, requested, policy.approval),
        timeBudget: resolveTimeBudget(policy.style, policy.timeBudget),
        fourEyes: policy.fourEyes ?? false,
      };
    },
  };
}

export type RunPolicyStore = ReturnType<typeof createRunPolicyStore>;
