/**
 * `node test/bench/gw-loop-counts.ts`: the gateway's event-loop counts (`loop-counts.ts`,
 * PROCESS=gateway; `GW_COUNT_SITES=1` as `COUNT_SITES=1`).
 */
process.env.PROCESS = 'gateway';
if (process.env.GW_COUNT_SITES === '1') process.env.COUNT_SITES = '1';
if (process.env.GW_SITE_DEPTH) process.env.SITE_DEPTH ??= process.env.GW_SITE_DEPTH;
await import('./loop-counts.ts');
