/** Path-parameter schemas shared by the route groups, built once (not per request). */
import { z } from 'zod';

/** `:id` of a run, connection or tenant: ids arrive in URLs, so they are bounded. */
export const idParams = z.object({ id: z.string().min(1).max(200) });
