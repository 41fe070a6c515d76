/**
 * The SDK as a consumer gets it: `npm pack` (which builds dist/ with tsc), installed from the
 * tarball into a fresh project outside the repository, imported as ESM, type-checked against its
 * shipped declarations (a wrong body is a type error), used against a local stack, and its `islet`
 * bin run through the link npm makes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SDK_DIR = fileURLToPath(new URL('..', import.meta.url));
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

let cluster: Cluster;
let dir: string;
let tarball: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'islet-sdk-consumer-'));
  execFileSync('npm', ['pack', '--pack-destination', dir], { cwd: SDK_DIR, stdio: 'pipe', timeout: 300_000 });
  tarball = join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!);
  cluster = await startCluster({ modes: ['read-only'] });
}, 400_000);
afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const CONSUMER = `import { createIsletApi, createIsletClient, IsletApiError, type CodeRun } from '@islet/sdk';

// No @types/node in this project: the SDK's declarations must not need it.
declare const process: { env: Record<string, string | undefined> };

const url = process.env.ISLET_URL ?? '';
const key = process.env.ISLET_API_KEY ?? '';
const api = createIsletApi({ url, key });
const { data, error, response } = await api.POST('/v1/runs', {
  body: { code: 'return 6 * 7', description: 'Multiply two numbers' },
  params: { header: { Prefer: 'wait=20' } },
});
if (error) throw new Error(JSON.stringify(error));
const status: CodeRun['status'] = data.status;
const missing = await api.GET('/v1/code-runs/{id}', { params: { path: { id: 'no-such-run' } } });
const client = createIsletClient({ url, key });
const again = await client.getRun(data.id);
let refused = '';
try {
  await client.getRun('no-such-run');
} catch (err) {
  if (err instanceof IsletApiError) refused = err.problem.type;
}
console.log(JSON.stringify({ http: response.status, status, value: data.result, notFound: missing.error?.type, again: again.status, refused }));
`;

const WRONG = `import { createIsletApi } from '@islet/sdk';
const api = createIsletApi({ url: 'http://x', key: 'k' });
await api.POST('/v1/runs', { body: { code: 42, description: 'A number is not a program' } });
await api.GET('/v1/no-such-route');
`;

describe('the packed SDK', () => {
  it('ships dist (ESM + declarations), the README and no sources or tests', () => {
    const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
    for (const f of [
      'package/dist/index.js',
      'package/dist/index.d.ts',
      'package/dist/cli.js',
      'package/README.md',
    ])
      expect(files).toContain(f);
    expect(files.filter((f) => f.endsWith('.test.ts') || f.includes('/src/'))).toEqual([]);
  });

  it('installs from the tarball, type-checks a consumer, refuses a wrong body, and works against the stack', () => {
    const project = join(dir, 'consumer');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    execFileSync('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: project,
      stdio: 'pipe',
      timeout: 300_000,
    });
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2024',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          lib: ['es2024', 'dom'],
          types: [],
        },
      }),
    );
    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    const ok = spawnSync(process.execPath, [TSC, '-p', project], { encoding: 'utf8' });
    expect(ok.stdout + ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    writeFileSync(join(project, 'wrong.ts'), WRONG);
    const wrong = spawnSync(process.execPath, [TSC, '-p', project], { encoding: 'utf8' });
    expect(wrong.status).not.toBe(0);
    expect(wrong.stdout).toMatch(/wrong\.ts\(3,.*Type 'number' is not assignable to type 'string'/);
    expect(wrong.stdout).toMatch(/wrong\.ts\(4,\d+\): error TS/);
    rmSync(join(project, 'wrong.ts'));

    // The same program as plain JavaScript (type annotations stripped by Node) against the stack.
    writeFileSync(
      join(project, 'consumer.mts'),
      CONSUMER.replace(', type CodeRun', '').replace(": CodeRun['status']", ''),
    );
    const env = { ...process.env, ISLET_URL: cluster.url, ISLET_API_KEY: cluster.devKey };
    const run = spawnSync(process.execPath, ['consumer.mts'], {
      cwd: project,
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({
      http: 200,
      status: 'Completed',
      value: { _tag: 'Completed', value: 42, logs: [] },
      notFound: 'https://islet.dev/problems/not-found',
      again: 'Completed',
      refused: 'https://islet.dev/problems/not-found',
    });

    // The bin npm linked runs the CLI.
    const cli = spawnSync(
      join(project, 'node_modules/.bin/islet'),
      ['run', '--code', 'return "from the bin"'],
      {
        encoding: 'utf8',
        env,
        timeout: 60_000,
      },
    );
    expect({ status: cli.status, stdout: cli.stdout, stderr: cli.stderr }).toEqual({
      status: 0,
      stdout: 'from the bin\n',
      stderr: '',
    });
  }, 600_000);
});
