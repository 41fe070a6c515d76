-- Ends the script when the run (KEYS[1]) is missing (-1) or already final (0); otherwise leaves
-- its status in `st`.
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return -1 end
if st == 'Completed' or st == 'Failed' or st == 'Cancelled' then return 0 end
