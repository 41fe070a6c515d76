/**
 * One run of `calls` parallel calls to the ping App, through a bench cluster's API, awaited to its
 * end (par-cpu.ts, par-monitor.ts): the connection made once, then a function a run.
 */
import { api } from '../e2e/helpers.ts';
import { parallelCalls } from './baselines.ts';
import { leanPost } from './cluster-figures.ts';
import { pingConnection } from './ping-app.ts';

export async function parallelCallRun(
  cluster: { url: string; devKey: string },
  pingPort: number,
  calls: number,
  description: string,
): Promise<() => Promise<void>> {
  const connection = await pingConnection(api(cluster.url, cluster.devKey), pingPort);
  const post = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
  const code = parallelCalls(calls);
  return async () => {
    const body = (await post({
      code,
      description,
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      connections: [connection],
    })) as { status?: string };
    if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
  };
}
