/**
 * The client process of `internal-transport-cpu.ts`: the runner's real gateway client
 * (`services/runner/src/gateway-client.ts`, its default transport) sending the calls the parent
 * asks for over IPC, one after another (`lone`) or 100 at a time in one batch (`batch`), and
 * answering when they are all answered.
 */
import { createGatewayClient, type GatewayClient } from '../../services/runner/src/gateway-client.ts';

interface Job {
  url: string;
  token: string;
  /** Runs to call on: lone calls' loop k on the k-th (calls of one run made together would go as a batch). */
  runIds: string[];
  binding: string;
  /** Calls to send; their indexes cycle through 0..indexes-1 (all journaled: each call is a replay). */
  calls: number;
  indexes: number;
  mode: 'lone' | 'batch';
  /** Lone calls: this many loops at once, each one call after another. */
  loops: number;
}

const clients = new Map<string, GatewayClient>();
process.on('message', async (job: Job) => {
  let client = clients.get(job.url);
  if (!client) {
    client = createGatewayClient({ urls: [job.url], token: job.token, maxTries: 1 });
    clients.set(job.url, client);
  }
  const call = (i: number, runId = job.runIds[0]!) =>
    client.call(runId, 1, { index: i % job.indexes, binding: job.binding, argsJson: '{}' }).then((live) => {
      const details = live.outcome.type === 'error' ? live.outcome.details : undefined;
      if ((details as { reason?: string } | undefined)?.reason !== 'unknown-binding')
        throw new Error(`unexpected outcome ${JSON.stringify(live.outcome)}`);
    });
  if (job.mode === 'lone') {
    const each = Math.ceil(job.calls / job.loops);
    await Promise.all(
      Array.from({ length: job.loops }, async (_, loop) => {
        for (let i = 0; i < each; i++) await call(i, job.runIds[loop]);
      }),
    );
  } else
    for (let i = 0; i < job.calls; i += 100)
      await Promise.all(Array.from({ length: Math.min(100, job.calls - i) }, (_, j) => call(j)));
  process.send?.('done');
});
