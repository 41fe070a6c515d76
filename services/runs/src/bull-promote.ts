/**
 * BullMQ 5.81.5's promoteDelayedJobs as the direct paths send it (handed-complete.ts on a
 * completion's next fetch, handed-refetch.ts on the end's second fetch): the same commands in the
 * text's order, its numbers as the text Redis prints for them. Both texts it stands for
 * (moveToFinished-14, moveToActive-11) hold the queue's first ten keys at the same places: wait 1,
 * prioritized 3, delayed 7, paused 8, the priority counter 10.
 */

/**
 * Lua for the promotion: jobs of the delayed set due by `now` (ms) onto the target list (paused
 * when `meta[1]`), or by priority into the prioritized set; `HSET delay 0` each; the base marker
 * at `marker` unless `maxed`. Reads the locals `call`, `meta`, `maxed`; sets the caller's
 * `pushed`, `prioritized` and `marked` (declared false before it).
 */
export function promoteDelayedJobs(v: { now: string; prefix: string; marker: string }): string {
  return `local due = call('ZRANGEBYSCORE', KEYS[7], '0', (${v.now} + 1) * 0x1000 - 1, 'LIMIT', '0', '1000')
if #due > 0 then
  call('ZREM', KEYS[7], unpack(due))
  local target = meta[1] and KEYS[8] or KEYS[1]
  for _, id in ipairs(due) do
    local key = ${v.prefix} .. id
    local priority = tonumber(call('HGET', key, 'priority')) or 0
    if priority == 0 then
      call('LPUSH', target, id)
      pushed = true
    else
      call('ZADD', KEYS[3], priority * 0x100000000 + call('INCR', KEYS[10]) % 0x100000000, id)
      prioritized = true
    end
    call('HSET', key, 'delay', '0')
  end
  if not maxed then
    call('ZADD', ${v.marker}, '0', '0')
    marked = true
  end
end`;
}
