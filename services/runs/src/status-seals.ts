/**
 * A store's status event seals: moved out of run-store.ts (a pure move), which makes one cache per
 * store and calls the `sealStatus` it returns directly.
 */

/** The sealing of a status event's data, `{"status":…}`, once per status (see below). */
export function statusSeals(seal: (v: unknown) => string): (status: string) => string {
  // A status event's data is one of a handful of constants (`{"status":"Running"}` at every
  // attempt's start, the final status at every end): each is sealed once per store and the sealed
  // text reused. The same plaintext under the same IV gives the same text, so a reader learns only
  // that two such events are equal, which their type and position already say; a fresh seal per
  // run cost the runner two AES-GCM setups a run for nothing.
  const sealedStatuses = new Map<string, string>();
  const sealStatus = (status: string): string => {
    let sealed = sealedStatuses.get(status);
    if (sealed === undefined) {
      sealed = seal({ status });
      sealedStatuses.set(status, sealed);
    }
    return sealed;
  };
  return sealStatus;
}
