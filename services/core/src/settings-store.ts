/**
 * Platform settings (Code Mode's `PATCH /v1/platform/settings`), one Redis hash shared by every
 * gateway and runner. Updates are compare-and-set on `version` in a Lua script, so two admins
 * racing cannot both win; a `code-mode` run snapshots them at creation (`run.request.limits`), so every execution
 * and replay of that run uses the same limits.
 */
import { RUN_CODE_LIMITS } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { channels, keys } from './keys.ts';

export const codeModeSettingsSchema = z.object({
  enabled: z.boolean(),
  timeoutMs: z.number().int().positive().max(RUN_CODE_LIMITS.maxTimeoutMs),
  memoryMb: z.number().int().min(8).max(4096),
  outputBytes: z.number().int().min(1024).max(67_108_864),
});
export type CodeModeSettings = z.infer<typeof codeModeSettingsSchema>;

export interface PlatformSettings {
  version: number;
  codeMode: CodeModeSettings;
}

/**
 * Defaults when nothing was ever stored. Code Mode is off on a fresh install (the Code Mode
 * document: "Code Mode is off by default"; the local devstack turns it on and says so). These
 * settings govern `code-mode` runs only; run_code runs have the run_code document's own limits.
 */
export const DEFAULT_SETTINGS: PlatformSettings = {
  version: 1,
  codeMode: { enabled: false, timeoutMs: 120_000, memoryMb: 128, outputBytes: 1_048_576 },
};

const CAS = `
local v = redis.call('HGET', KEYS[1], 'version')
if not v then v = ARGV[3] end
if tonumber(v) ~= tonumber(ARGV[1]) then return {0, v, redis.call('HGET', KEYS[1], 'codeMode') or ''} end
local nv = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'version', nv, 'codeMode', ARGV[2])
redis.call('PUBLISH', ARGV[4], nv)
return {1, tostring(nv), ARGV[2]}
`;

export function createSettingsStore(redis: Redis, defaults: PlatformSettings = DEFAULT_SETTINGS) {
  const parse = (
    version: string | null | undefined,
    codeMode: string | null | undefined,
  ): PlatformSettings => ({
    version: version ? Number(version) : defaults.version,
    codeMode: codeMode ? { ...defaults.codeMode, ...JSON.parse(codeMode) } : defaults.codeMode,
  });
  return {
    async get(): Promise<PlatformSettings> {
      const [version, codeMode] = await redis.hmget(keys.settings(), 'version', 'codeMode');
      return parse(version, codeMode);
    },
    /** Applies a partial `codeMode` if `expectedVersion` is current; otherwise returns the current settings. */
    async update(
      expectedVersion: number,
      patch: Partial<CodeModeSettings>,
    ): Promise<{ ok: true; settings: PlatformSettings } | { ok: false; current: PlatformSettings }> {
      const current = await this.get();
      const next = codeModeSettingsSchema.parse({ ...current.codeMode, ...patch });
      const res = (await redis.eval(
        CAS,
        1,
        keys.settings(),
        String(expectedVersion),
        JSON.stringify(next),
        String(defaults.version),
        channels.settings,
      )) as [number, string, string];
      const settings = parse(res[1], res[2] || null);
      return res[0] === 1 ? { ok: true, settings } : { ok: false, current: settings };
    },
  };
}

export type SettingsStore = ReturnType<typeof createSettingsStore>;
