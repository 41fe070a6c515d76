/**
 * `node test/bench/serve-cpu.ts`: the gateway's own CPU for a run's `CALLS` (default 100) parallel
 * binding calls, without the cluster around it: real gateway deps (`createGatewayDeps`) on a real
 * redis-server, `bindingCalls.serve` for every call of a run at once (what the batch route does),
 * then the run's journal read back as its waiter reads it (`journal.listCalls`, the record's
 * calls), against a loopback App in a child process (`{"ok":true}`, or `ANSWER`'s text). Prints
 * this thread's CPU a call (`process.threadCpuUsage`) over `RUNS` runs (default 300) after
 * `WARM` (default 300): no runner, host, App or client shares the thread, so it reads the
 * gateway's per-call work with less noise than the cluster's /proc figures. Counts a run beside it:
 * decryptions, reviver parses, prom-client recording calls, parses of a call's arguments, App
 * requests made before their call's claim came back (round 32) and serialisations of the binding's
 * source. `PROMISES=1` (round 40, `par-calls`): promises made a call (async_hooks' `PROMISE`
 * inits over the measured runs: a count; the hook slows the thread, so its CPU is not read then).
 */
import { createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { createLogger, generateSealKey, loadConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { createBindingCalls } from '../../services/gateway/src/binding-calls.ts';
import { createGatewayDeps } from '../../services/gateway/src/create-deps.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const WARM = Number(process.env.WARM ?? 300);
const RUNS = Number(process.env.RUNS ?? 300);
const ANSWER = process.env.ANSWER ?? '{"ok":true}';
const PROMISES = process.env.PROMISES === '1';
let promises = 0;
const promiseHook = createHook({
  init(_id, type) {
    if (type === 'PROMISE') promises++;
  },
});
// `REAL=1`: a tool as Apps describe theirs (an inputSchema of ~1.3 KB: ten described fields, two
// required) and arguments of ~600 bytes that fit it, instead of `{}` and `{"i":n}`.
const REAL = process.env.REAL === '1';
const field = (type: string, description: string) => ({ type, description });
const realSchema = {
  type: 'object',
  properties: {
    i: field('number', 'The call number within the run, used to correlate requests with answers.'),
    title: field('string', 'A short title for the record that is created or updated by this call.'),
    body: field('string', 'The body text of the record; markdown is accepted and kept as written.'),
    labels: { type: 'array', items: { type: 'string' }, description: 'Labels to attach to the record.' },
    assignee: field('string', 'The user name of the person the record is assigned to, if any.'),
    priority: { type: 'string', enum: ['low', 'normal', 'high', 'urgent'], description: 'How urgent it is.' },
    due: field('string', 'A due date in ISO 8601 form (YYYY-MM-DD), or absent when there is none.'),
    project: field('string', 'The project the record belongs to; the default project when absent.'),
    notify: field('boolean', 'Whether watchers of the project are notified of the change.'),
    meta: { type: 'object', additionalProperties: { type: 'string' }, description: 'Free-form metadata.' },
  },
  required: ['i', 'title'],
  additionalProperties: false,
};
const argsOf = (i: number): string =>
  REAL
    ? JSON.stringify({
        i,
        title: `Record number ${i} of the parallel bench run`,
        body: 'Some text for the body of the record. '.repeat(10),
        labels: ['bench', 'parallel', `n${i % 7}`],
        assignee: 'someone',
        priority: 'normal',
        due: '2026-12-31',
        project: 'islet',
        notify: false,
        meta: { source: 'serve-cpu', kind: 'bench' },
      })
    : JSON.stringify({ i });

const appSource = `
const http = require('node:http');
const answer = ${JSON.stringify(ANSWER)};
const s = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
});
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`;
const appProcess = spawn(process.execPath, ['-e', appSource], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise<number>((resolve) =>
  appProcess.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
);
const redis = await startRedis({ appendOnly: false });
const config = loadConfig({
  ISLET_REDIS_URL: redis.url,
  ISLET_SEAL_KEYS: generateSealKey(),
  ISLET_INTERNAL_TOKEN: 'internal-token-for-the-serve-bench',
  ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true',
});
const deps = await createGatewayDeps(config, createLogger({ name: 'bench', level: 'silent' }));
let line = '';
try {
  const tenant = 'bench';
  await deps.tenants.createTenant({ id: tenant, name: tenant });
  const c = await deps.connections.create(tenant, {
    name: 'Bench',
    kind: 'http',
    url: `http://127.0.0.1:${port}/`,
    tools: [{ name: 'ping', inputSchema: REAL ? realSchema : {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!c.ok) throw new Error(c.detail);
  const connectionId = c.connection.id;
  const bindingCalls = createBindingCalls(deps);
  // Counts a run: decryptions (the journal's outcome memo wraps this sealer) and JSON parses with
  // a reviver (the App answer's lossless parse).
  const counts = { opens: 0, revived: 0, prom: 0, argParses: 0, early: 0, sources: 0 };
  // App request bodies made (`<run>:<index>`), and serialisations of a binding's source: a call
  // whose request was made before its claim's reply came back is counted `early` (round 32).
  const made = new Set<string>();
  const stringify = JSON.stringify;
  JSON.stringify = ((value: unknown, ...rest: never[]) => {
    if (value !== null && typeof value === 'object') {
      const ctx = (value as { context?: { run?: string; callIndex?: number } }).context;
      if (ctx?.run !== undefined && 'tool' in value) made.add(`${ctx.run}:${ctx.callIndex}`);
      else if (Object.keys(value).join() === 'connectionId,connectionName,name,kind') counts.sources++;
    }
    return stringify(value, ...rest);
  }) as typeof JSON.stringify;
  const claim = deps.journal.claim.bind(deps.journal);
  deps.journal.claim = async (runId, attempt, call) => {
    const reply = await claim(runId, attempt, call);
    if (made.has(`${runId}:${call.index}`)) counts.early++;
    return reply;
  };
  // This run's calls' argument texts: parses of them are counted.
  const argTexts = new Set<string>();
  // prom-client's own recording calls for the binding call metrics (label checks and keying each).
  const { bindingCalls: callCounter, bindingCallDuration: callHistogram } = deps.metrics;
  const inc = callCounter.inc.bind(callCounter);
  callCounter.inc = ((...a: Parameters<typeof inc>) => {
    counts.prom++;
    return inc(...a);
  }) as typeof inc;
  const observe = callHistogram.observe.bind(callHistogram);
  callHistogram.observe = ((...a: Parameters<typeof observe>) => {
    counts.prom++;
    return observe(...a);
  }) as typeof observe;
  const open = deps.sealer.open.bind(deps.sealer);
  deps.sealer.open = (sealed: string) => {
    counts.opens++;
    return open(sealed);
  };
  const parse = JSON.parse;
  JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
    if (reviver) counts.revived++;
    if (argTexts.has(text)) counts.argParses++;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  const signal = new AbortController().signal;
  const argText = (index: number) => {
    const text = argsOf(index);
    argTexts.add(text);
    return text;
  };
  let n = 0;
  let systemUs = 0;
  const oneRun = async (): Promise<number> => {
    const id = `serve-cpu-${process.pid}-${n++}`;
    await deps.runs.create(
      runFixture(id, {
        tenant,
        request: {
          connections: [connectionId],
          bindings: [
            { binding: 'bench.ping', connectionId, connectionName: 'Bench', name: 'ping', kind: 'tool' },
          ],
        },
      }) as never,
    );
    const t0 = process.threadCpuUsage();
    const served = await Promise.all(
      Array.from({ length: CALLS }, (_, index) =>
        bindingCalls.serve(id, 1, { index, binding: 'bench.ping', argsJson: argText(index) }, signal),
      ),
    );
    const calls = await deps.journal.listCalls(id);
    const t1 = process.threadCpuUsage(t0);
    made.clear();
    if (served.some((s) => s?.outcome.type !== 'result') || calls.length !== CALLS)
      throw new Error(`a call failed: ${JSON.stringify(served.find((s) => s?.outcome.type !== 'result'))}`);
    systemUs += t1.system;
    return t1.user + t1.system;
  };
  for (let i = 0; i < WARM; i++) await oneRun();
  let us = 0;
  counts.opens = 0;
  counts.revived = 0;
  counts.prom = 0;
  counts.argParses = 0;
  counts.early = 0;
  counts.sources = 0;
  systemUs = 0;
  if (PROMISES) promiseHook.enable();
  const started = performance.now();
  for (let i = 0; i < RUNS; i++) us += await oneRun();
  promiseHook.disable();
  line =
    `${RUNS} runs of ${CALLS} parallel calls served in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
    `this thread's CPU a call (serve + the end's journal read): ${(us / RUNS / CALLS).toFixed(1)} µs ` +
    `(in the kernel ${(systemUs / RUNS / CALLS).toFixed(1)}); ` +
    `a run: ${(counts.opens / RUNS).toFixed(1)} decryptions, ${(counts.revived / RUNS).toFixed(1)} parses with a reviver, ` +
    `${(counts.prom / RUNS).toFixed(1)} prom-client inc/observe calls, ` +
    `${(counts.argParses / RUNS / CALLS).toFixed(2)} parses of a call's arguments, ` +
    `${(counts.early / RUNS / CALLS).toFixed(2)} App requests made before their claim's reply a call, ` +
    `${(counts.sources / RUNS).toFixed(1)} serialisations of the binding's source` +
    (PROMISES
      ? `; promises a call ${(promises / RUNS / CALLS).toFixed(2)} (the run's create and read included)`
      : '');
} finally {
  await deps.close();
  await redis.stop();
  appProcess.kill();
}
console.log(line);
