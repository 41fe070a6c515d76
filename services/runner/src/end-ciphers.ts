/**
 * How many ciphers the runner's sealer keeps made ahead (core's sealer.ts `ready`), and below how
 * many it makes the used ones again (`restockBelow`). A run's end seals two values (its result and
 * its text, run-store's `endFields`) between the program's end and the end's write; the sealer
 * makes the used ciphers again only after the turn, in two hops of the check phase. Two a slot
 * (one end's worth each) are left whenever a restock is due, so every slot's end between two
 * restocks finds its ciphers made: with 2 kept, 0.86 of a run's 2 ciphers were made at the seal
 * at 16 clients and 4 slots (test/bench/README.md, round 32 `runner-run`).
 *
 * Restocked in batches, as the gateway's are (round 32 `gw-seal`): with the stock at two a slot,
 * every end's two were made again right after it, alone and cold (the first of a batch 30–40 µs
 * p50, the ones after it ~2), the sealer's restock the runner's largest item of its own after the
 * seals (test/bench/README.md, round 39 `runner-cpu` and `sealer`). `END_CIPHERS_BATCH` more are
 * kept, so a restock comes once every ~12 ends and makes ~24 in a row. The ciphers made are as many
 * as before; each holds a fresh IV of its own, used once, as any seal's.
 */
export const END_CIPHERS_BATCH = 24;

/**
 * The runner sealer's stock options (core's `SealerOptions`): two a slot (at least one slot) left
 * whenever a restock is due, and END_CIPHERS_BATCH more made with them.
 */
export function endCipherStock(slots: number): { ready: number; restockBelow: number } {
  const perSlots = 2 * Math.max(1, Math.floor(slots));
  return { ready: perSlots + END_CIPHERS_BATCH, restockBelow: perSlots };
}
