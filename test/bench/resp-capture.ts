/**
 * `RESP_CAPTURE=<file> node test/bench/resp-capture.ts`: the real argument lists of the commands
 * `OneCopyCommand` encodes (a submit's, a binding call's claim and outcome, a run's end…), as one
 * bench cluster sends them over `RUNS` (default 3) runs of `CALLS` (default 2) binding calls each;
 * every process preloads resp-capture-preload.ts. resp-count.ts encodes them (callgrind).
 */
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { startOneClientCluster } from './cluster-figures.ts';
import { parallelCallRun } from './parallel-run.ts';

const RUNS = Number(process.env.RUNS ?? 3);
const CALLS = Number(process.env.CALLS ?? 2);
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as { port: number }).port;
const preload = resolve(import.meta.dirname, 'resp-capture-preload.ts');
const cluster = await startOneClientCluster('1', {
  NODE_OPTIONS: `--import=${preload}`,
  RESP_CAPTURE: resolve(process.env.RESP_CAPTURE as string),
});
try {
  const run = await parallelCallRun(cluster, port, CALLS, 'RESP capture');
  for (let i = 0; i < RUNS; i++) await run();
} finally {
  await cluster.stop();
  server.close();
}
