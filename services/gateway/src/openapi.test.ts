/**
 * `/openapi.json` is built from the registered routes and the schemas they validate with: every
 * route is documented, every operation has its success answers and its problem+json refusals,
 * every example request passes the route's own checks, and the `/docs` try-it-out example of
 * `POST /v1/runs` is accepted by a real gateway (real Redis), and the SDK's committed copy
 * (`services/sdk/openapi.json`, its codegen's input) is the document the gateway serves.
 */
import { readFileSync } from 'node:fs';
import { PROBLEM_BASE, PROBLEMS, type ProblemCode } from '@islet/protocol';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { OPERATIONS } from './openapi/operations.ts';
import {
  createRouteCatalog,
  documentedRoutes,
  openApiDocument,
  operationKey,
  undocumentedRoutes,
} from './openapi.ts';
import { OPENAPI_FILE, openApiJson } from './openapi-file.ts';

// biome-ignore lint/suspicious/noExplicitAny: a parsed JSON document, read field by field
type Loose = Record<string, any>;

let key: string;
let doc: Loose;
const catalog = createRouteCatalog();

const { app, deps } = await onGatewayApp({ app: { routeCatalog: catalog } });

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read', 'decisions', 'platform.admin']))
    .key;
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
});

const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, Loose>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op })),
  );

describe('/openapi.json', () => {
  it("the SDK's committed openapi.json is the document this gateway serves", () => {
    const committed = readFileSync(OPENAPI_FILE, 'utf8');
    expect(JSON.parse(committed)).toEqual(doc);
    expect(
      committed === openApiJson() ? 'same' : 'differs',
      'rewrite it: bash scripts/toolchain.sh node services/gateway/src/openapi-file.ts (then the SDK codegen)',
    ).toBe('same');
  });

  it('documents every registered route, and has no entry for a route that is not registered', () => {
    expect(catalog.routes.length).toBeGreaterThan(30);
    expect(undocumentedRoutes(catalog.routes)).toEqual([]);
    const registered = new Set(catalog.routes.map(operationKey));
    expect(Object.keys(OPERATIONS).filter((k) => !registered.has(k))).toEqual([]);
    // The check can fail: a new route without an entry is reported.
    expect(undocumentedRoutes([{ method: 'GET', url: '/v1/new-thing' }])).toEqual([
      { method: 'GET', url: '/v1/new-thing' },
    ]);
    expect(operations().length).toBe(Object.keys(OPERATIONS).length);
    // What the SDK's generator builds without an app is the document the gateway serves.
    expect(doc).toEqual(JSON.parse(JSON.stringify(openApiDocument(documentedRoutes()))));
  });

  it('gives every operation a success answer and its problem+json refusals, each with a valid example', () => {
    const ids = new Set<string>();
    for (const { path, method, op } of operations()) {
      const where = `${method} ${path}`;
      expect(op.operationId, where).toMatch(/^[a-z][A-Za-z0-9]+$/);
      expect(ids.has(op.operationId), `${where}: operationId unique`).toBe(false);
      ids.add(op.operationId);
      const statuses = Object.keys(op.responses).map(Number);
      // GET /mcp only ever answers 405: there is no server-initiated stream.
      if (where !== 'get /mcp')
        expect(
          statuses.some((s) => s < 400),
          `${where}: a success`,
        ).toBe(true);
      const refusals = statuses.filter((s) => s >= 400);
      expect(refusals.length, `${where}: refusals`).toBeGreaterThan(0);
      for (const s of refusals) {
        const content = op.responses[s].content?.['application/problem+json'];
        expect(content?.schema, `${where} ${s}`).toEqual({ $ref: '#/components/schemas/Problem' });
        for (const [code, example] of Object.entries(content.examples as Record<string, Loose>)) {
          expect(PROBLEMS[code as ProblemCode]?.status, `${where} ${code}`).toBe(s);
          expect(example.value).toMatchObject({ type: PROBLEM_BASE + code, status: s, code });
        }
      }
      // An authenticated operation says how it refuses a missing key.
      if (op.security.length > 0) expect(op.responses['401'], where).toBeDefined();
    }
    const runs = doc.paths['/v1/runs'].post.responses;
    expect(Object.keys(runs).sort()).toEqual([
      '200',
      '202',
      '400',
      '401',
      '403',
      '409',
      '413',
      '415',
      '429',
      '500',
      '503',
    ]);
    expect(Object.keys(runs['409'].content['application/problem+json'].examples)).toEqual([
      'idempotency-conflict',
    ]);
    expect(runs['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CodeRun' });
  });

  it("every example request passes the route's own checks", () => {
    let checked = 0;
    for (const [route, entry] of Object.entries(OPERATIONS)) {
      if (!entry.body) continue;
      const [method, url] = route.split(' ') as [string, string];
      const path = url.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{path}');
      const served = doc.paths[path][method.toLowerCase()].requestBody.content;
      const example = Object.values(served as Record<string, Loose>)[0]!.example;
      expect(example, route).toEqual(entry.body.example);
      const refusal = entry.body.accepts
        ? entry.body.accepts(example)
        : entry.body.schema.safeParse(example).success
          ? undefined
          : entry.body.schema.safeParse(example).error?.message;
      expect(refusal, route).toBeUndefined();
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('the /docs try-it-out example of POST /v1/runs is accepted, and /docs serves the same document', async () => {
    const example = doc.paths['/v1/runs'].post.requestBody.content['application/json'].example;
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: example,
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ status: 'Running', code: example.code, reason: example.description });
    const tenant = doc.paths['/v1/admin/tenants'].post.requestBody.content['application/json'].example;
    const created = await app.inject({
      method: 'POST',
      url: '/v1/admin/tenants',
      headers: { authorization: `Bearer ${key}` },
      payload: tenant,
    });
    expect(created.statusCode, created.body).toBe(201);
    expect((await app.inject({ method: 'GET', url: '/docs/json' })).json()).toEqual(doc);
  });

  it('names the shapes clients use in components', () => {
    const schemas = doc.components.schemas as Loose;
    for (const name of ['CodeRun', 'RunRequest', 'Problem', 'Decision', 'DecisionAnswer', 'SkillRequest'])
      expect(schemas[name], name).toBeDefined();
    expect(schemas.RunRequest.required).toEqual(['code', 'description']);
    expect(schemas.CodeRun.properties.status.enum).toEqual(
      expect.arrayContaining(['Running', 'Waiting', 'Completed', 'Failed', 'Cancelled']),
    );
  });
});
