/**
 * How many ciphers the runner's sealer keeps made ahead (core's sealer.ts `ready`). A run's end
 * seals two values (its result and its text, run-store's `endFields`) between the program's end and
 * the end's write; the sealer makes the used ciphers again only after the turn, in two hops of the
 * check phase. With 2 kept (one end's worth), every end that came before that restock, which other
 * slots' ends often do under load, made both its ciphers itself, on its own path: 0.86 of a run's 2
 * ciphers at 16 clients and 4 slots (test/bench/README.md, round 32 `runner-run`). Two a slot
 * cover every slot's end between two restocks; the ciphers made are as many as before, only made
 * after the writes. Each holds a fresh IV of its own, used once, as any seal's.
 */
export const endCiphersReady = (slots: number): number => 2 * Math.max(1, Math.floor(slots));
