/**
 * Workspace files end to end (real processes, real Redis): tenants put/get/list/delete session
 * files over HTTP; programs reach them only through the built-in `files.*` bindings, served and
 * journaled in the runner, under the run's sandbox mode. Wider modes go through the escalation
 * decision first. Also: the runner's sandbox process metrics.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, startAppServer, until } from './helpers.ts';

const DENIED_RO = 'File sandbox: read-only; enforcement: full; operation denied';

let cluster: Cluster;
let a: Api;
let other: Api;
let otherKey: string;
let app: Awaited<ReturnType<typeof startAppServer>>;

beforeAll(async () => {
  cluster = await startCluster({ env: { ISLET_RUNNER_CONCURRENCY: '2' } });
  a = api(cluster.url, cluster.devKey);
  expect((await a('POST', '/v1/admin/tenants', { id: 'initech', name: 'Initech' })).status).toBe(201);
  otherKey = (await a('POST', '/v1/admin/tenants/initech/keys', { scopes: ['apps.use'] })).body.key;
  other = api(cluster.url, otherKey);
  app = await startAppServer(() => ({ status: 200, body: '{"ok":true}' }));
}, 90_000);

afterAll(async () => {
  await app?.close();
  await cluster?.stop();
});

/** Raw-bytes file request (the files routes take any body as bytes). */
async function file(method: string, path: string, key = cluster.devKey, body?: string) {
  const res = await fetch(`${cluster.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'text/plain' } : {}),
    },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  let json: Loose;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, type: res.headers.get('content-type') ?? '' };
}

const run = (code: string, sessionId: string, extra: Record<string, unknown> = {}) => ({
  code,
  description: 'Use the session workspace files',
  sessionId,
  turnId: 't1',
  callId: 'c1',
  ...extra,
});

async function finished(id: string, api_ = a): Promise<Loose> {
  return until(async () => {
    const r = await api_('GET', `/v1/code-runs/${id}`);
    return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) ? r.body : undefined;
  }, 30_000);
}

async function status(id: string, want: string): Promise<Loose> {
  return until(async () => {
    const r = await a('GET', `/v1/code-runs/${id}`);
    return r.body.status === want ? r.body : undefined;
  }, 30_000);
}

describe('workspace files over HTTP', () => {
  it('put, get, list, delete; tenant walls, scopes and bad paths', async () => {
    const put = await file('PUT', '/v1/sessions/ws-http/files/notes/a.txt', cluster.devKey, 'hello files');
    expect(put.status).toBe(201);
    expect(put.json).toEqual({ path: 'notes/a.txt', sizeBytes: 11 });
    const got = await file('GET', '/v1/sessions/ws-http/files/notes/a.txt');
    expect(got.status).toBe(200);
    expect(got.type).toContain('application/octet-stream');
    expect(got.text).toBe('hello files');
    const list = await file('GET', '/v1/sessions/ws-http/files');
    expect(list.json.files).toEqual([expect.objectContaining({ path: 'notes/a.txt', sizeBytes: 11 })]);

    // Another tenant: the session does not exist for it.
    expect((await file('GET', '/v1/sessions/ws-http/files/notes/a.txt', otherKey)).status).toBe(404);
    expect((await file('GET', '/v1/sessions/ws-http/files', otherKey)).status).toBe(404);
    expect((await file('DELETE', '/v1/sessions/ws-http/files/notes/a.txt', otherKey)).status).toBe(404);
    // …and its own session of the same name is its own.
    expect((await file('PUT', '/v1/sessions/ws-http/files/notes/a.txt', otherKey, 'theirs')).status).toBe(
      201,
    );
    expect((await file('GET', '/v1/sessions/ws-http/files/notes/a.txt')).text).toBe('hello files');

    // Authentication and scope.
    const anon = await fetch(`${cluster.url}/v1/sessions/ws-http/files`);
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toContain('application/problem+json');
    const readOnlyKey = (
      await a('POST', `/v1/admin/tenants/${cluster.tenantId}/keys`, { scopes: ['sessions.read'] })
    ).body.key;
    const noScope = await file('GET', '/v1/sessions/ws-http/files', readOnlyKey);
    expect(noScope.status).toBe(403);

    // Traversal is refused as input, never a 500.
    const traversal = await file('PUT', '/v1/sessions/ws-http/files/..%2F..%2Fetc%2Fx', cluster.devKey, 'x');
    expect(traversal.status).toBe(400);
    expect(traversal.json.type).toBe('https://islet.dev/problems/validation');

    expect((await file('DELETE', '/v1/sessions/ws-http/files/notes/a.txt')).status).toBe(204);
    expect((await file('GET', '/v1/sessions/ws-http/files/notes/a.txt')).status).toBe(404);
  });
});

describe('files.* bindings in programs', () => {
  it('read-only: a program reads and lists its session workspace; the calls are journaled', async () => {
    await file('PUT', '/v1/sessions/ws-ro/files/in.txt', cluster.devKey, 'forty-two');
    const res = await a(
      'POST',
      '/v1/runs',
      run(
        'const f = await apps.files.read({ path: "in.txt" }); const l = await apps.files.list({}); return { content: f.content, files: l.files };',
        'ws-ro',
      ),
      { prefer: 'wait=20' },
    );
    expect(res.body.status, JSON.stringify(res.body)).toBe('Completed');
    expect(res.body.result.value).toEqual({
      content: 'forty-two',
      files: [{ path: 'in.txt', sizeBytes: 9 }],
    });
    expect(res.body.calls.map((c: Loose) => [c.index, c.binding, c.source?.connectionName])).toEqual([
      [0, 'files.read', 'files'],
      [1, 'files.list', 'files'],
    ]);
  });

  it('read-only: a write is a catchable error with the contract text; uncaught, the run fails keeping it', async () => {
    const caught = await a(
      'POST',
      '/v1/runs',
      run(
        'try { await apps.files.write({ path: "x.txt", content: "no" }); return "wrote" } catch (e) { return e.name + ": " + e.message }',
        'ws-ro',
      ),
      { prefer: 'wait=20' },
    );
    expect(caught.body.status).toBe('Completed');
    expect(caught.body.result.value).toBe(`AppCallFailed: ${DENIED_RO}`);

    const uncaught = await a(
      'POST',
      '/v1/runs',
      run('await apps.files.write({ path: "x.txt", content: "no" }); return "wrote"', 'ws-ro'),
      { prefer: 'wait=20' },
    );
    expect(uncaught.body.status).toBe('Failed');
    expect(uncaught.body.text).toContain('code run failed (exception): ');
    // The denial line appears once (the uncaught error's message already carries it).
    expect(uncaught.body.text.split(DENIED_RO)).toHaveLength(2);
    // Full enforcement here: no partial line.
    expect(uncaught.body.text).not.toContain('File sandbox enforcement is partial on this host.');
    expect((await file('GET', '/v1/sessions/ws-ro/files/x.txt')).status).toBe(404);
  });

  it('a journaled read is replayed, not read again, when the run resumes after a decision', async () => {
    const conn = await a('POST', '/v1/connections', {
      name: 'Mail',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'send', policy: 'ask' }],
    });
    expect(conn.status, JSON.stringify(conn.body)).toBe(201);
    await file('PUT', '/v1/sessions/ws-replay/files/draft.txt', cluster.devKey, 'version 1');
    const submitted = await a(
      'POST',
      '/v1/runs',
      run(
        'const d = await apps.files.read({ path: "draft.txt" }); await apps.mail.send({ body: d.content }); return d.content;',
        'ws-replay',
        { connections: [conn.body.id] },
      ),
    );
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    await status(id, 'Waiting');
    // Changed while the run waits: the replay must still see what the program saw.
    await file('PUT', '/v1/sessions/ws-replay/files/draft.txt', cluster.devKey, 'version 2');
    expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true })).status).toBe(200);
    const done = await finished(id);
    expect(done.status, JSON.stringify(done)).toBe('Completed');
    expect(done.result.value).toBe('version 1');
    expect(app.deliveries.at(-1)?.body.arguments).toEqual({ body: 'version 1' });
  });

  it('workspace-write (escalated, allowed) writes; danger-full-access (escalated, allowed) writes too', async () => {
    for (const mode of ['workspace-write', 'danger-full-access'] as const) {
      const session = `ws-${mode}`;
      const submitted = await a(
        'POST',
        '/v1/runs',
        run(
          `const w = await apps.files.write({ path: "out/report.txt", content: "made in ${mode}" }); return w;`,
          session,
          { sandbox_permissions: mode, justification: 'It writes the report into the workspace.' },
        ),
      );
      const id = submitted.body.id as string;
      await status(id, 'Waiting');
      expect((await file('GET', `/v1/sessions/${session}/files/out/report.txt`)).status).toBe(404);
      const [d] = (await a('GET', '/v1/decisions')).body.items.filter((x: Loose) => x.code.run === id);
      expect(d).toMatchObject({ capability: { action: 'sandbox.escalate', target: mode } });
      expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: -1, allow: true })).status).toBe(200);
      const done = await finished(id);
      expect(done.status, JSON.stringify(done)).toBe('Completed');
      expect(done.result.value).toEqual({ path: 'out/report.txt', sizeBytes: `made in ${mode}`.length });
      expect((await file('GET', `/v1/sessions/${session}/files/out/report.txt`)).text).toBe(
        `made in ${mode}`,
      );
    }
  });

  it("a program never reaches outside its session's workspace", async () => {
    await file('PUT', '/v1/sessions/ws-secret/files/secret.txt', cluster.devKey, 'top secret');
    const res = await a(
      'POST',
      '/v1/runs',
      run(
        `const out = [];
         for (const path of ["../ws-secret/secret.txt", "/etc/passwd", "../../initech/ws-http/notes/a.txt"]) {
           try { await apps.files.read({ path }); out.push("read " + path) } catch (e) { out.push(e.details?.reason ?? e.message) }
         }
         return out;`,
        'ws-ro',
      ),
      { prefer: 'wait=20' },
    );
    expect(res.body.status).toBe('Completed');
    expect(res.body.result.value).toHaveLength(3);
    for (const v of res.body.result.value) expect(v).not.toMatch(/^read /);

    // Another tenant's program in a session of the same name sees its own (empty) workspace.
    const theirs = await other(
      'POST',
      '/v1/runs',
      run(
        'try { await apps.files.read({ path: "secret.txt" }); return "leaked" } catch (e) { return e.details?.reason }',
        'ws-secret',
      ),
      { prefer: 'wait=20' },
    );
    expect(theirs.body.status).toBe('Completed');
    expect(theirs.body.result.value).toBe('not-found');
  });
});

describe('a tenant that shapes its own workspace (through a skill)', () => {
  it('a FIFO, a socket and symlinks it planted are refused at once over HTTP and in a program, while another tenant is served', async () => {
    const planted = await a('POST', '/v1/skills/run_code', {
      language: 'python',
      code: [
        'import os, stat',
        'os.mkfifo("pipe")',
        // Sandboxes have no sockets at all; a socket inode is made without one.
        'os.mknod("sock", stat.S_IFSOCK | 0o600)',
        'os.symlink("/proc/self/environ", "env")',
        'os.symlink("/", "root")',
        'os.symlink("../../initech/ws-http", "theirs")',
        'open("ok.txt", "w").write("fine")',
        'print("planted")',
      ].join('\n'),
      sessionId: 'ws-hostile',
    });
    expect(planted.body, JSON.stringify(planted.body)).toMatchObject({ success: true, output: 'planted\n' });
    await file('PUT', '/v1/sessions/ws-calm/files/x.txt', otherKey, 'calm');

    // Refused from the file's type before any open (a FIFO with no writer would block for good).
    const [pipe, sock, neighbour] = await Promise.all([
      file('GET', '/v1/sessions/ws-hostile/files/pipe'),
      file('GET', '/v1/sessions/ws-hostile/files/sock'),
      file('GET', '/v1/sessions/ws-calm/files/x.txt', otherKey),
    ]);
    for (const r of [pipe, sock]) {
      expect(r.status).toBe(409);
      expect(r.json.type).toBe('https://islet.dev/problems/unsupported-file-type');
    }
    expect(neighbour).toMatchObject({ status: 200, text: 'calm' });
    for (const path of ['env', 'root/etc/passwd', 'theirs/notes/a.txt']) {
      const r = await file('GET', `/v1/sessions/ws-hostile/files/${path}`);
      expect({ path, status: r.status, reason: r.json?.reason }).toEqual({
        path,
        status: 400,
        reason: 'outside-workspace',
      });
    }
    const listed = await file('GET', '/v1/sessions/ws-hostile/files');
    expect(listed.json.files.map((f: { path: string }) => f.path)).toEqual(['ok.txt']);

    const res = await a(
      'POST',
      '/v1/runs',
      run(
        `const out = {};
         for (const path of ["pipe", "sock", "env", "root/etc/passwd", "ok.txt"]) {
           try { out[path] = (await apps.files.read({ path })).content } catch (e) { out[path] = e.details?.reason }
         }
         return out;`,
        'ws-hostile',
      ),
      { prefer: 'wait=20' },
    );
    expect(res.body.status).toBe('Completed');
    expect(res.body.result.value).toEqual({
      pipe: 'unsupported-file-type',
      sock: 'unsupported-file-type',
      env: 'outside-workspace',
      'root/etc/passwd': 'outside-workspace',
      'ok.txt': 'fine',
    });
  });
});

describe('sandbox process metrics on the runner', () => {
  const metric = (text: string, name: string, labels: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };

  it('islet_sandbox_processes{mode} and islet_sandbox_process_restarts_total{mode,reason}', async () => {
    const ro = cluster.runners.find((r) => r.modes?.includes('read-only'))!;
    const spin = await a('POST', '/v1/runs', run('for (;;) {}', 'ws-metrics', { timeoutMs: 300 }), {
      prefer: 'wait=20',
    });
    expect(spin.body.status).toBe('Failed');
    expect(spin.body.text).toContain('code run failed (timeout)');
    // The watchdog killed the host (reason "killed": the program's doing, not a crash); it is
    // replaced (prewarm): the gauge comes back to at least one.
    const text = await until(async () => {
      const t = await (await fetch(`${ro.url}/metrics`)).text();
      const restarts = metric(t, 'islet_sandbox_process_restarts_total', 'mode="read-only",reason="killed"');
      const processes = metric(t, 'islet_sandbox_processes', 'mode="read-only"');
      return (restarts ?? 0) >= 1 && (processes ?? 0) >= 1 ? t : undefined;
    }, 10_000);
    expect(metric(text, 'islet_sandbox_enforcement', 'mode="read-only",level="full"')).toBe(1);
    // Files bindings count as binding calls (served in the runner).
    expect(metric(text, 'islet_binding_calls_total', 'outcome="denied"')).toBeGreaterThanOrEqual(1);
  });
});

describe('a host without the kernel layer (ISLET_SANDBOX_JAIL=off)', () => {
  let bare: Cluster;
  beforeAll(async () => {
    bare = await startCluster({ modes: ['read-only'], env: { ISLET_SANDBOX_JAIL: 'off' } });
  }, 60_000);
  afterAll(async () => {
    await bare?.stop();
  });

  it('says enforcement is partial in the denial and in the failed run text', async () => {
    const b = api(bare.url, bare.devKey);
    const res = await b(
      'POST',
      '/v1/runs',
      run('await apps.files.write({ path: "x.txt", content: "no" })', 'ws-bare'),
      { prefer: 'wait=20' },
    );
    expect(res.body.status).toBe('Failed');
    const lines = res.body.text.split('\n');
    expect(lines[0]).toMatch(/^code run failed \(exception\): /);
    expect(
      res.body.text.split('File sandbox: read-only; enforcement: partial; operation denied'),
    ).toHaveLength(2);
    expect(lines).toContain('File sandbox enforcement is partial on this host.');
  });
});
