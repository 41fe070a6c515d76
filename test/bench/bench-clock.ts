/**
 * The benches' client stamps: core's `wallNow` (the clock the gateway's and runner's stage stamps
 * use since round 29), or, where the services under test predate it (`ab.sh` against an older
 * base swaps `services/` under this bench), `performance.timeOrigin + performance.now()` as they
 * stamped then. A namespace import: a named import of a missing export would not load at all.
 */
import * as core from '@islet/core';

export const benchNow: () => number =
  (core as { wallNow?: () => number }).wallNow ?? (() => performance.timeOrigin + performance.now());
