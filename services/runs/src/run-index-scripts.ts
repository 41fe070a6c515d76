/**
 * The run index's Lua (run-index.ts), as `lua/*.lua` files like the run store's: what a create and
 * an end write into the tenant's index (includes/index-create.lua, includes/finish-tenant.lua), the fold
 * of pending ends (includes/index-fold.lua, fold-index-5), the list scripts and the tenant feed. Every key is in the tenant's `{t:<tenant>}` slot (keys.ts), except
 * where run-store-scripts.ts sends them with a run's own keys on one server (where no slot is
 * checked).
 */
import { channels } from '@islet/core';
import { HEALTH_BUCKET_MS, HEALTH_TTL_SECONDS, LATENCY_BINS_PER_DOUBLING } from './health-buckets.ts';
import { loadScript } from './lua-scripts.ts';
import { USAGE_RETENTION_SECONDS } from './run-index-writes.ts';

/** Ended runs a create removes from the index at most (those past retention), oldest first. */
const PRUNE_PER_CREATE = 4;

/** Feed entries kept per tenant (approximate trim): what a reconnecting events stream can resume. */
const FEED_MAX_LEN = 1000;

/** The parameters of includes/feed.lua. */
const FEED_PARAMS = { FEED_MAX_LEN, TENANT_FEED_CHANNEL: channels.tenantFeed };
export const FEED_APPEND = loadScript('feed-append-1', FEED_PARAMS);

/**
 * Entries (creates and ends) a tenant's pending list holds before the end that reaches this many
 * has them folded (includes/index-fold.lua, by its caller's fold-index-5 call after the end's
 * answer): the fold's writes, one per key, are shared by them.
 */
export const FOLD_AT = 64;

/** Entries one fold takes at most (a reader folds again while a fold took this many). */
export const FOLD_MAX = 1024;

/** The parameters of includes/index-fold.lua. */
const FOLD_PARAMS = {
  FEED_MAX_LEN,
  HEALTH_BUCKET_MS,
  LATENCY_BINS_PER_DOUBLING,
  HEALTH_TTL_SECONDS,
  PRUNE_PER_CREATE,
  FOLD_MAX,
  USAGE_RETENTION_SECONDS,
};
/** The parameters of includes/index-create.lua (which includes the feed; a create only appends). */
export const INDEX_CREATE_PARAMS = FEED_PARAMS;
/**
 * The parameters of includes/finish-tenant.lua (which includes the feed; the fold it says is due
 * is its caller's own call, `foldAfterEnd` in run-index.ts).
 */
export const FINISH_TENANT_PARAMS = { ...FEED_PARAMS, FOLD_AT };
export const INDEX_CREATE = loadScript('index-create-7', INDEX_CREATE_PARAMS);
export const FINISH_TENANT = loadScript('finish-tenant-9', FINISH_TENANT_PARAMS);
/**
 * The tenant half and the end's stored-bytes charge in one call (a Cluster's end, run-store.ts): the
 * counter is in the tenant's slot too (includes/charge.lua).
 */
export const FINISH_TENANT_CHARGE = loadScript('finish-tenant-charge-10', FINISH_TENANT_PARAMS);
export const FOLD_INDEX = loadScript('fold-index-5', FOLD_PARAMS);
export const LIST_RUNS = loadScript('list-runs-2');
export const LIST_SESSIONS = loadScript('list-sessions-2');
