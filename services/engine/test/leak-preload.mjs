// Loaded into a real sandbox host with `--import` (private-growth.test.ts): keeps 1 MiB of
// anonymous memory (a filled Buffer, never freed) for every chunk the host reads on stdin after its
// first run's, a leak of the host's own for the engine's growth bound to catch.
const kept = [];
let chunks = 0;
process.stdin.on('data', () => {
  if (++chunks > 1) kept.push(Buffer.alloc(1024 * 1024, 1));
});
