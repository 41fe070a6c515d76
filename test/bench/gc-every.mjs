/**
 * Bench-only preload (round 37, `semi-space`): a full collection every `GC_EVERY_MS` (default 200)
 * in the process it reaches (`ISLET_DEV_NODE_FLAGS="--expose-gc --import <abs>/test/bench/gc-every.mjs"`).
 * Used by `young-gen.ts` to tell apart young objects that outlive two scavenges because they live
 * long from ones kept only by dead old-space objects (a full collection frees those holders: the
 * scavenges' promoted bytes fall). Not for timing: the collections cost what they cost.
 */
const every = Number(process.env.GC_EVERY_MS ?? 200);
if (typeof globalThis.gc === 'function') setInterval(() => globalThis.gc(), every).unref();
