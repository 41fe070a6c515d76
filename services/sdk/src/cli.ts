#!/usr/bin/env node
/**
 * `islet` command line; `islet --help` prints every command and flag (USAGE below).
 * Everything but direct admin talks to the gateway at ISLET_URL with ISLET_API_KEY (`npm start`
 * prints the export line; there is no default, an unset one is said so). Admin commands talk to
 * Redis directly when ISLET_REDIS_URL (or --redis-url) is given — the way to make the first
 * platform.admin key — otherwise to the gateway's admin endpoints with a platform.admin key. The Redis connection follows the same
 * variables as the services (ISLET_REDIS_MODE, _SENTINELS, _PASSWORD(_FILE), _CA_FILE; cluster
 * seeds comma-separated in the URL).
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { type CliIo, escapeControls, readAll, writeProgramText } from './cli-output.ts';
import {
  type CodeRun,
  createIsletClient,
  FINAL_STATUSES,
  type IsletClient,
  type SubmitRun,
} from './client.ts';
import type { operations } from './generated/openapi.ts';

type Scope =
  operations['postV1AdminTenantsByIdKeys']['requestBody']['content']['application/json']['scopes'][number];
/** The API's scopes; the type check holds this list equal to the generated API types. */
const SCOPES = [
  'apps.use',
  'sessions.read',
  'sessions.admin',
  'decisions',
  'platform.admin',
  'workflows',
] as const;
const everyScopeListed: [Exclude<Scope, (typeof SCOPES)[number]>] extends [never] ? true : never = true;
void everyScopeListed;

/**
 * Admin straight on Redis needs the services' own Redis and tenant code (@islet/core), which only
 * the Islet repository has; the published CLI talks to the gateway instead.
 */
async function core() {
  try {
    return await import('@islet/core');
  } catch {
    throw new UsageError(
      'admin commands on Redis (ISLET_REDIS_URL / --redis-url) run from the Islet repository; elsewhere use the gateway: ISLET_URL and a platform.admin key',
    );
  }
}

/** Every flag the CLI takes (`--help` lists each; a test holds the two together). */
export const OPTIONS = {
  name: { type: 'string' },
  id: { type: 'string' },
  tenant: { type: 'string' },
  scopes: { type: 'string', default: 'apps.use,sessions.read,decisions' },
  'rate-limit': { type: 'string' },
  'max-in-flight': { type: 'string' },
  'redis-url': { type: 'string' },
  url: { type: 'string' },
  key: { type: 'string' },
  code: { type: 'string' },
  file: { type: 'string' },
  description: { type: 'string', default: 'Run a program from the command line' },
  session: { type: 'string' },
  style: { type: 'string' },
  principal: { type: 'string' },
  'timeout-ms': { type: 'string' },
  'sandbox-permissions': { type: 'string' },
  justification: { type: 'string' },
  wait: { type: 'string', default: '30' },
  scope: { type: 'string' },
  json: { type: 'boolean' },
  raw: { type: 'boolean' },
} as const;

export const USAGE = `usage:
  islet run [--code <js> | --file <path> | < program.js] [--description <text>]
            [--style run_code|code-mode] [--session <id>] [--timeout-ms <ms>] [--wait <seconds>]
            [--sandbox-permissions <mode> --justification <text>] [--json] [--raw]
  islet watch <run-id> [--json] [--raw]
  islet decisions [--json]
  islet decisions allow|deny <decision-id> [--scope once|session]
  islet admin create-tenant --name <name> [--id <id>] [--rate-limit <per-minute>] [--max-in-flight <n>]
  islet admin create-key --tenant <id> [--scopes <a,b>] [--principal <who>]
  islet --help

The gateway is ISLET_URL and the key ISLET_API_KEY; \`npm start\` prints the line that sets both:
  export ISLET_URL=http://127.0.0.1:<port> ISLET_API_KEY=isk_…

flags:
  --code <js>              the program: the body of an async function (run)
  --file <path>            read the program from a file, \`-\` for stdin (run; stdin is read when
                           neither --code nor --file is given and it is not a terminal)
  --description <text>     five to ten words saying what it does (run)
  --style <style>          run_code or code-mode (run; default: the tenant's run policy)
  --session <id>           session of the run (run; default: generated)
  --timeout-ms <ms>        run_code time budget (run; default 120000)
  --sandbox-permissions <mode>
                           run_code: workspace-write or danger-full-access; a person decides first
  --justification <text>   with --sandbox-permissions: one sentence shown to that person
  --wait <seconds>         how long the gateway holds the answer (run; default 30); a run still
                           going then (waiting for a decision) is followed on its event stream
  --json                   print the record / events / decisions as JSON
  --raw                    print the program's output as it is, terminal control sequences
                           included (on a terminal they are shown as \\xNN by default)
  --scope <scope>          once (default) or session: allow later calls of the same tool in the
                           session too (decisions allow)
  --name <name>            tenant name (create-tenant)
  --id <id>                tenant id (create-tenant; default: generated)
  --rate-limit <n>         requests per minute for the tenant (create-tenant)
  --max-in-flight <n>      runs the tenant may have queued or running (create-tenant)
  --tenant <id>            the tenant a key is for (create-key)
  --scopes <a,b>           scopes of the key, from: ${SCOPES.join(', ')}
                           (default: apps.use,sessions.read,decisions)
  --principal <who>        who the key belongs to; sessions belong to principals (default: the key)
  --url <url>              gateway URL (default: ISLET_URL)
  --key <key>              API key (default: ISLET_API_KEY)
  --redis-url <url>        admin commands straight on Redis (default: ISLET_REDIS_URL)
  -h, --help               this text
`;

/** A refusal of the command line itself: printed without a stack, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const isFinal = (run: CodeRun) => (FINAL_STATUSES as readonly string[]).includes(run.status);
const processIo: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };

export async function runCli(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  io: CliIo = processIo,
): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [group, command, target] = positionals;
  const out = (v: unknown) => io.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  const redisUrl = values['redis-url'] ?? env.ISLET_REDIS_URL;
  const raw = values.raw === true;
  const client = (): IsletClient => {
    const url = values.url ?? env.ISLET_URL;
    const key = values.key ?? env.ISLET_API_KEY;
    if (!url)
      throw new UsageError(
        'ISLET_URL is not set: start Islet (`npm start`) and paste the `export ISLET_URL=… ISLET_API_KEY=…` line it prints, or pass --url',
      );
    if (!key)
      throw new UsageError(
        'ISLET_API_KEY is not set: paste the `export ISLET_URL=… ISLET_API_KEY=…` line `npm start` prints, or pass --key',
      );
    return createIsletClient({ url, key });
  };
  /** The record's result text (or the whole record with --json); exit 0 only when it completed. */
  const printRun = (run: CodeRun) => {
    if (values.json) out(run);
    else if (run.text !== undefined) writeProgramText(io.stdout, `${run.text}\n`, raw);
    else out(run);
    return run.status === 'Completed' ? 0 : 1;
  };
  const tellDecision = (runId: string, data: unknown) => {
    const d = data as { id?: string; capability?: { action?: string; target?: string } };
    const id = d.id ?? `${runId}:?`;
    io.stderr.write(
      escapeControls(
        `run ${runId} waits for a decision (${d.capability?.action ?? 'decision'} ${d.capability?.target ?? ''}): islet decisions allow ${id}\n`,
      ),
    );
  };

  if (group === 'admin' && command === 'create-tenant') {
    if (!values.name) throw new UsageError('--name is required');
    const input = {
      name: values.name,
      ...(values.id ? { id: values.id } : {}),
      ...(values['rate-limit'] ? { rateLimitPerMinute: Number(values['rate-limit']) } : {}),
      ...(values['max-in-flight'] ? { maxInFlightRuns: Number(values['max-in-flight']) } : {}),
    };
    if (redisUrl) {
      const { createRedis, createTenantStore, redisConfigFromEnv } = await core();
      const redis = createRedis(redisConfigFromEnv({ ...env, ISLET_REDIS_URL: redisUrl }));
      try {
        out(await createTenantStore(redis).createTenant(input));
      } finally {
        redis.disconnect();
      }
    } else out(await client().createTenant(input));
    return 0;
  }
  if (group === 'admin' && command === 'create-key') {
    if (!values.tenant) throw new UsageError('--tenant is required');
    const scopes = values.scopes.split(',').map((s) => s.trim());
    const bad = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (bad.length) throw new UsageError(`unknown scopes: ${bad.join(', ')} (known: ${SCOPES.join(', ')})`);
    if (redisUrl) {
      const { createRedis, createTenantStore, redisConfigFromEnv } = await core();
      const redis = createRedis(redisConfigFromEnv({ ...env, ISLET_REDIS_URL: redisUrl }));
      try {
        const options = values.principal ? { principal: values.principal } : {};
        out(await createTenantStore(redis).createKey(values.tenant, scopes as Scope[], options));
      } finally {
        redis.disconnect();
      }
    } else out(await client().createKey(values.tenant, scopes, values.principal));
    return 0;
  }
  if (group === 'run') {
    if (values.style !== undefined && values.style !== 'run_code' && values.style !== 'code-mode')
      throw new UsageError('--style must be run_code or code-mode');
    if (values.code !== undefined && values.file !== undefined)
      throw new UsageError('give the program once: --code or --file');
    const code =
      values.code ??
      (values.file === undefined || values.file === '-'
        ? values.file === undefined && io.stdin.isTTY
          ? undefined
          : await readAll(io.stdin)
        : await readFile(values.file, 'utf8'));
    if (code === undefined || code.trim() === '')
      throw new UsageError('no program: give --code <js>, --file <path>, or pipe it on stdin');
    const api = client();
    let run = await api.submitRun(
      {
        code,
        description: values.description,
        ...(values.style ? { style: values.style } : {}),
        ...(values.session ? { sessionId: values.session } : {}),
        ...(values['timeout-ms'] ? { timeoutMs: Number(values['timeout-ms']) } : {}),
        ...(values['sandbox-permissions']
          ? { sandbox_permissions: values['sandbox-permissions'] as SubmitRun['sandbox_permissions'] }
          : {}),
        ...(values.justification ? { justification: values.justification } : {}),
      },
      { waitSeconds: Number(values.wait) },
    );
    if (!isFinal(run)) {
      const id = run.id;
      run = await api.waitForRun(id, {
        onEvent: (e) => {
          if (e.event === 'decision.needed') tellDecision(id, e.data);
        },
      });
    }
    return printRun(run);
  }
  if (group === 'watch') {
    if (!command) throw new UsageError('islet watch <run-id>');
    const api = client();
    let ended = false;
    for await (const e of api.events(command)) {
      if (values.json) io.stdout.write(`${JSON.stringify(e)}\n`);
      else writeProgramText(io.stdout, `${e.event} ${JSON.stringify(e.data)}\n`, raw);
      if (e.event === 'decision.needed') tellDecision(command, e.data);
      if (e.event === 'end') ended = true;
    }
    if (!ended) throw new Error(`the event stream of run ${command} ended before the run did`);
    const run = await api.getRun(command);
    if (!values.json && run.text !== undefined) writeProgramText(io.stdout, `${run.text}\n`, raw);
    return run.status === 'Completed' ? 0 : 1;
  }
  if (group === 'decisions') {
    const api = client();
    if (command === undefined) {
      const items = await api.listDecisions();
      if (values.json) out(items);
      else if (items.length === 0) io.stdout.write('no pending decisions\n');
      else
        for (const d of items)
          io.stdout.write(
            escapeControls(
              `${d.id}  ${d.capability.action} ${d.capability.target}${d.justification ? `  "${d.justification}"` : ''}\n`,
            ),
          );
      return 0;
    }
    if (command !== 'allow' && command !== 'deny') throw new UsageError('islet decisions [allow|deny <id>]');
    const m = /^(.+):(-?\d+)$/.exec(target ?? '');
    if (!m)
      throw new UsageError(`islet decisions ${command} <run-id>:<index> (the id \`islet decisions\` lists)`);
    if (values.scope !== undefined && values.scope !== 'once' && values.scope !== 'session')
      throw new UsageError('--scope must be once or session');
    const answered = await api.answerDecision(m[1]!, Number(m[2]), {
      allow: command === 'allow',
      ...(values.scope ? { scope: values.scope } : {}),
    });
    out(answered);
    return 0;
  }
  io.stderr.write(USAGE);
  return 2;
}

// Run as a program (directly, or through the `islet` bin link), not when imported.
if (process.argv[1] && import.meta.url === `file://${realpathSync(process.argv[1])}`) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`islet: ${escapeControls(err.message)}\n`);
      process.exit(
        err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1,
      );
    },
  );
}
