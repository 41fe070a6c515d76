import { codeModeSettingsSchema } from '@islet/core';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';

/** The PATCH body; the OpenAPI description's `SettingsPatch` is generated from it. */
export const settingsPatchSchema = z
  .object({ expectedVersion: z.number().int().min(0), codeMode: codeModeSettingsSchema.partial().strict() })
  .strict();

export function settingsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  return async (app) => {
    app.get('/v1/platform/settings', { preHandler: auth.requireScopes() }, async () => deps.settings.get());
    app.patch(
      '/v1/platform/settings',
      { preHandler: auth.requireScopes('platform.admin') },
      async (request) => {
        const parsed = settingsPatchSchema.safeParse(request.body);
        if (!parsed.success) throw validationProblem(parsed.error, '', settingsPatchSchema);
        const res = await deps.settings.update(parsed.data.expectedVersion, parsed.data.codeMode);
        if (!res.ok)
          throw new HttpProblem(
            'version-conflict',
            `expectedVersion ${parsed.data.expectedVersion} is stale; the settings are at version ${res.current.version}`,
            { currentVersion: res.current.version, current: res.current },
          );
        return res.settings;
      },
    );
  };
}
