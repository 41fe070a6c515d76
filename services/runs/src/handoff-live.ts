/**
 * A hand-off registration's liveness (round 46 `takeback`): what a runner's worker holds while it
 * lives, and the add's check of it (handoff-scripts.ts `handOffAddScript`, `liveCheck`).
 */

/**
 * The channel a worker subscribes to while it lives, on its runner's subscriber connection: named
 * as its hand-off key (`handOffKeys(..).handOff`; channels and keys are apart in Redis), so the
 * add's script derives it from the registration's member (the worker id) without a stored field.
 */
export function liveChannelOf(handOffKey: string): string {
  return handOffKey;
}

/**
 * The liveness check of the registration chosen (`handOffAddScript`'s `liveCheck`, the gateway's
 * ISLET_HANDOFF_LIVE_CHECK): a runner's worker holds a subscription to the channel named as its
 * hand-off key (`<queue>handoff:<worker id>`, runner mode-worker.ts) on its runner's subscriber
 * connection, which Redis drops with the connection when the runner dies (SIGKILL, an OOM kill: its
 * sockets closed by the kernel). A registration whose channel has no subscriber is dropped, never
 * handed a job, and the next latest looked at; none left, the add is as without a registration (its
 * marker set: a live worker wakes and fetches). Before it, a dead worker's registration took the
 * next submit of its mode, taken back by the gateway's watch 1 s later (round 45 `crash-handoff`).
 * A live worker whose subscription is briefly absent (its subscriber reconnecting) is only fetched
 * for instead. One PUBSUB NUMSUB a handed submit (a dict lookup; test/bench/README.md round 46
 * `takeback`); a runner older than 6b60376a subscribes to none, so the check (on by default since
 * round 47) is off for a roll from such a release.
 */
export const LIVE_CHECK = `local handOffPrefix = string.sub(idleKey, 1, -5) .. 'handoff:'
while redis.call('PUBSUB', 'NUMSUB', handOffPrefix .. worker)[2] == 0 do
  unpropagated('HDEL', idleArgsKey, worker)
  top = unpropagated('ZPOPMAX', idleKey)
  if not top[1] then return marked(added) end
  if tonumber(top[2]) <= now then
    unpropagated('DEL', idleKey, idleArgsKey)
    return marked(added)
  end
  worker = top[1]
end`;
