// Loaded into a real sandbox host with `--import` (private-growth.test.ts): keeps 1 MiB of
// anonymous memory (a filled Buffer, never freed) for every frame write the host makes to the
// engine (fd 1) after its first run's, a leak of the host's own for the engine's growth bound to
// catch. Counted at the host's writes, not its reads: the host reads fd 0 through a socket of its
// own (host-input.ts), and a `process.stdin` made here would be a second reader of the same pipe.
import fs from 'node:fs';

const kept = [];
let writes = 0;
const writeSync = fs.writeSync;
fs.writeSync = function (fd, ...rest) {
  // `ready`, then the first run's `done`: the leak starts with the second run.
  if (fd === 1 && ++writes > 2) kept.push(Buffer.alloc(1024 * 1024, 1));
  return writeSync.call(this, fd, ...rest);
};
