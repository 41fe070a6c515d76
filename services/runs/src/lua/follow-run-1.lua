-- Marks a run's record `followed`: a stream is about to follow its progress, so its attempts'
-- starts publish it even when its create saw no listener (includes/begin-attempt.lua). A missing
-- record (expired, never made) is left missing.
-- KEYS[1] run record; no ARGV. Returns 1 if marked, 0 if no record.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'followed', '1')
return 1
