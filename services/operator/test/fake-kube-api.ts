/**
 * FAKE Kubernetes API server, for tests only. It speaks the real HTTP API for the endpoints the
 * operator uses, with the semantics that matter to a controller:
 * - GET / LIST (label selectors) / WATCH as a chunked stream of ADDED, MODIFIED, DELETED events
 *   (BOOKMARK on request), resumable from a resourceVersion; a compacted-away resourceVersion
 *   gets the ERROR event with a 410 Expired Status, as the real server sends it;
 * - POST, PUT (optimistic concurrency: a stale metadata.resourceVersion gets 409 Conflict),
 *   PATCH (application/merge-patch+json, application/json-patch+json; strategic merge patch is
 *   treated as a merge patch, which is the same for the maps the operator patches), DELETE;
 * - the status subresource (writes to the main resource ignore status and vice versa;
 *   metadata.generation moves only when spec changes);
 * - coordination.k8s.io Leases for leader election; core/v1 Events; the RunnerPool CRD's /scale
 *   subresource (autoscaling/v1 Scale over .spec.replicas, .status.replicas, .status.selector);
 * - `hang(token)`: one client's requests are never answered (stalled API server, partition).
 * With `simulateWorkloads` it also plays the Deployment/ReplicaSet controllers and the kubelet in
 * the smallest faithful way: pods follow spec.replicas, scale-in deletes the pods with the lowest
 * `controller.kubernetes.io/pod-deletion-cost` first (after not-ready ones), and the Deployment's
 * status reports them ready.
 * - server-side apply (PATCH application/apply-patch+yaml, ?fieldManager=, ?force=true) with
 *   field ownership per manager, every other write recording its manager (field-ownership.ts).
 * Not simulated: rolling updates of the pod template, admission, RBAC.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { applyConfiguration, type Owners, recordWrite } from './field-ownership.ts';

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown> & {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generateName?: string;
    ownerReferences?: { kind: string; name: string; uid: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [k: string]: unknown;
};

interface ResourceType {
  apiVersion: string;
  kind: string;
  listKind: string;
  hasStatus: boolean;
}

const RESOURCES: Record<string, ResourceType> = {
  'v1/pods': { apiVersion: 'v1', kind: 'Pod', listKind: 'PodList', hasStatus: true },
  // The chart's secret hook (ensure-secret.ts) creates and completes the release's Secret.
  'v1/secrets': { apiVersion: 'v1', kind: 'Secret', listKind: 'SecretList', hasStatus: false },
  // Events the operator records about RunnerPools.
  'v1/events': { apiVersion: 'v1', kind: 'Event', listKind: 'EventList', hasStatus: false },
  'apps/v1/deployments': {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    listKind: 'DeploymentList',
    hasStatus: true,
  },
  'coordination.k8s.io/v1/leases': {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    listKind: 'LeaseList',
    hasStatus: false,
  },
  'islet.dev/v1alpha1/runnerpools': {
    apiVersion: 'islet.dev/v1alpha1',
    kind: 'RunnerPool',
    listKind: 'RunnerPoolList',
    hasStatus: true,
  },
};

interface Event {
  rv: number;
  resource: string;
  namespace: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Obj;
}

interface WatchStream {
  resource: string;
  namespace: string;
  selector: (labels: Record<string, string> | undefined) => boolean;
  res: ServerResponse;
  bookmarks: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
}

export interface FakeKubeApiOptions {
  /** Play Deployment/ReplicaSet controller + kubelet for Deployments. Default false. */
  simulateWorkloads?: boolean;
  /** Events kept for watch resumption; older resourceVersions get 410 Expired. Default 1000. */
  eventHistoryLimit?: number;
}

const clone = <T>(v: T): T => structuredClone(v);

function status(code: number, reason: string, message: string, details?: Record<string, unknown>): Obj {
  // A Status object's `status` is a string, unlike every other kind's.
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
    details,
  } as unknown as Obj;
}

/** Equality-based label selectors: `a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-joined. */
export function parseLabelSelector(
  sel: string | undefined,
): (labels: Record<string, string> | undefined) => boolean {
  const terms = (sel ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => {
      const ne = t.match(/^([^!=]+)!=(.*)$/);
      if (ne) return (l: Record<string, string>) => l[ne[1]!.trim()] !== ne[2]!.trim();
      const eq = t.match(/^([^!=]+)==?(.*)$/);
      if (eq) return (l: Record<string, string>) => l[eq[1]!.trim()] === eq[2]!.trim();
      if (t.startsWith('!')) return (l: Record<string, string>) => !(t.slice(1) in l);
      return (l: Record<string, string>) => t in l;
    });
  return (labels) => terms.every((f) => f(labels ?? {}));
}

/** RFC 7386 JSON merge patch. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const out: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/** RFC 6902 JSON patch (add, remove, replace, test). Throws on a failed op. */
export function applyJsonPatch(doc: unknown, ops: { op: string; path: string; value?: unknown }[]): unknown {
  const root = { v: clone(doc) } as Record<string, unknown>;
  for (const op of ops) {
    const parts = [
      'v',
      ...op.path
        .split('/')
        .slice(1)
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')),
    ];
    const last = parts.pop()!;
    let parent: unknown = root;
    for (const p of parts) {
      parent = (parent as Record<string, unknown>)?.[p];
      if (parent === undefined) throw new Error(`path not found: ${op.path}`);
    }
    const container = parent as Record<string, unknown> & unknown[];
    if (op.op === 'test') {
      if (JSON.stringify(container[last as never]) !== JSON.stringify(op.value))
        throw new Error(`test failed: ${op.path}`);
    } else if (op.op === 'remove') {
      if (!(last in container)) throw new Error(`path not found: ${op.path}`);
      if (Array.isArray(container)) container.splice(Number(last), 1);
      else delete container[last];
    } else if (op.op === 'add' || op.op === 'replace') {
      if (op.op === 'replace' && !(last in container)) throw new Error(`path not found: ${op.path}`);
      if (Array.isArray(container) && op.op === 'add') {
        container.splice(last === '-' ? container.length : Number(last), 0, clone(op.value));
      } else container[last as never] = clone(op.value) as never;
    } else throw new Error(`unsupported op ${op.op}`);
  }
  return root.v;
}

export class FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  /** Pods the simulated ReplicaSet deleted, in order (scale-in assertions). */
  readonly deletedPods: string[] = [];
  private readonly server: Server;
  private readonly objects = new Map<string, Obj>();
  /** Field ownership per object key (server-side apply; see field-ownership.ts). */
  private readonly owners = new Map<string, Owners>();
  private events: Event[] = [];
  private rv = 100;
  private oldestResumableRv = 100;
  private readonly watches = new Set<WatchStream>();
  private readonly failures: { method: string; path: string | RegExp; code: number; remaining: number }[] =
    [];
  private readonly opts: Required<FakeKubeApiOptions>;
  private port = 0;
  private readonly hungTokens = new Set<string>();
  private held = 0;

  private constructor(opts: FakeKubeApiOptions) {
    this.opts = { simulateWorkloads: false, eventHistoryLimit: 1000, ...opts };
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.send(res, 500, status(500, 'InternalError', String(err)));
      });
    });
  }

  static async start(opts: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
    const api = new FakeKubeApi(opts);
    await new Promise<void>((resolve) => api.server.listen(0, '127.0.0.1', resolve));
    const a = api.server.address();
    api.port = a && typeof a === 'object' ? a.port : 0;
    return api;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * A KubeConfig pointing @kubernetes/client-node at this fake. A `token` (sent as a bearer token)
   * tells this client's requests apart, e.g. to hang only one operator's calls.
   */
  kubeConfig(token?: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'fake', ...(token ? { token } : {}) }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
      currentContext: 'fake',
    });
    return kc;
  }

  async stop(): Promise<void> {
    for (const w of this.watches) w.res.destroy();
    this.watches.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- test controls -------------------------------------------------------------------------

  /** Ends every open watch stream cleanly (like an API server restart or a proxy timeout). */
  dropWatches(): number {
    const n = this.watches.size;
    for (const w of this.watches) w.res.end();
    this.watches.clear();
    return n;
  }

  /** Forgets the event history: resuming a watch from any earlier resourceVersion gets 410. */
  compact(): void {
    // etcd's revision is global: writes to other resources moved it past what any watcher saw.
    this.rv += 10;
    this.events = [];
    this.oldestResumableRv = this.rv;
  }

  /** Sends a BOOKMARK with the current resourceVersion on every watch that asked for them. */
  bookmark(): void {
    for (const w of this.watches) {
      if (!w.bookmarks) continue;
      const t = RESOURCES[w.resource]!;
      this.write(w, 'BOOKMARK', {
        apiVersion: t.apiVersion,
        kind: t.kind,
        metadata: { resourceVersion: String(this.rv) },
      });
    }
  }

  /** The next `count` requests whose method matches and whose path contains `path` (or matches it) fail with `code`. */
  failNext(method: string, path: string | RegExp, code: number, count = 1): void {
    this.failures.push({ method, path, code, remaining: count });
  }

  /**
   * Every later request carrying this bearer token is read and never answered (a stalled API
   * server or a partitioned network, as the client sees it), until `unhang`.
   */
  hang(token: string): void {
    this.hungTokens.add(token);
  }

  unhang(token: string): void {
    this.hungTokens.delete(token);
  }

  /** Requests currently held by `hang`. */
  get hungRequests(): number {
    return this.held;
  }

  get openWatches(): number {
    return this.watches.size;
  }

  get(resource: string, namespace: string, name: string): Obj | undefined {
    const o = this.objects.get(`${resource}|${namespace}|${name}`);
    return o ? clone(o) : undefined;
  }

  list(resource: string, namespace: string, labelSelector?: string): Obj[] {
    const sel = parseLabelSelector(labelSelector);
    return [...this.objects.entries()]
      .filter(([k, o]) => k.startsWith(`${resource}|${namespace}|`) && sel(o.metadata?.labels))
      .map(([, o]) => clone(o));
  }

  /** Creates or replaces an object as a cluster admin would (kubectl apply), bumping generation on spec change. */
  apply(resource: string, namespace: string, input: object, manager = 'kubectl'): Obj {
    const obj = input as Obj;
    const name = obj.metadata?.name ?? '';
    const existing = this.objects.get(`${resource}|${namespace}|${name}`);
    if (!existing) return this.create(resource, namespace, clone(obj), false, manager);
    const next = { ...clone(obj), status: existing.status };
    next.metadata = {
      ...existing.metadata,
      ...obj.metadata,
      resourceVersion: existing.metadata?.resourceVersion,
    };
    return this.update(resource, namespace, existing, next, manager);
  }

  /** Removes an object as an admin would. */
  remove(resource: string, namespace: string, name: string): void {
    const key = `${resource}|${namespace}|${name}`;
    const o = this.objects.get(key);
    if (!o) return;
    this.objects.delete(key);
    this.owners.delete(key);
    o.metadata = { ...o.metadata, resourceVersion: String(++this.rv) };
    this.emit({ rv: this.rv, resource, namespace, type: 'DELETED', object: o });
  }

  // ---- storage ---------------------------------------------------------------------------------

  private create(
    resource: string,
    namespace: string,
    body: Obj,
    dropStatus: boolean,
    manager = 'unknown',
  ): Obj {
    const t = RESOURCES[resource]!;
    const meta = { ...(body.metadata ?? {}) };
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    const obj: Obj = {
      ...body,
      apiVersion: t.apiVersion,
      kind: t.kind,
      metadata: {
        ...meta,
        namespace,
        uid: randomUUID(),
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        resourceVersion: String(++this.rv),
        ...(t.hasStatus && resource !== 'v1/pods' ? { generation: 1 } : {}),
      },
    };
    if (dropStatus) delete obj.status;
    this.objects.set(`${resource}|${namespace}|${meta.name}`, obj);
    const owners: Owners = new Map();
    recordWrite(owners, undefined, obj, manager);
    this.owners.set(`${resource}|${namespace}|${meta.name}`, owners);
    this.emit({ rv: this.rv, resource, namespace, type: 'ADDED', object: obj });
    return clone(obj);
  }

  private update(resource: string, namespace: string, current: Obj, next: Obj, manager = 'unknown'): Obj {
    const t = RESOURCES[resource]!;
    next.apiVersion = t.apiVersion;
    next.kind = t.kind;
    next.metadata = {
      ...next.metadata,
      name: current.metadata?.name,
      namespace,
      uid: current.metadata?.uid,
      creationTimestamp: current.metadata?.creationTimestamp,
      resourceVersion: current.metadata?.resourceVersion,
      generation: current.metadata?.generation,
    };
    if (next.metadata.generation === undefined) delete next.metadata.generation;
    if (JSON.stringify(next) === JSON.stringify(current)) return clone(current); // no-op: no new version
    if (
      current.metadata?.generation !== undefined &&
      JSON.stringify(next.spec) !== JSON.stringify(current.spec)
    ) {
      next.metadata.generation = (current.metadata.generation ?? 0) + 1;
    }
    next.metadata.resourceVersion = String(++this.rv);
    const key = `${resource}|${namespace}|${current.metadata?.name}`;
    this.objects.set(key, next);
    if (!this.owners.has(key)) this.owners.set(key, new Map());
    recordWrite(this.owners.get(key)!, current, next, manager);
    this.emit({ rv: this.rv, resource, namespace, type: 'MODIFIED', object: next });
    return clone(next);
  }

  private emit(e: Event): void {
    this.events.push({ ...e, object: clone(e.object) });
    if (this.events.length > this.opts.eventHistoryLimit) {
      const dropped = this.events.shift()!;
      this.oldestResumableRv = dropped.rv;
    }
    for (const w of this.watches) {
      if (w.resource === e.resource && w.namespace === e.namespace && w.selector(e.object.metadata?.labels)) {
        this.write(w, e.type, e.object);
      }
    }
    if (this.opts.simulateWorkloads && e.resource === 'apps/v1/deployments' && e.type !== 'DELETED') {
      setImmediate(() => this.syncWorkload(e.namespace, e.object.metadata?.name ?? ''));
    }
  }

  private write(w: WatchStream, type: string, object: Obj): void {
    if (w.res.writableEnded || w.res.destroyed) return;
    w.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  /** Deployment + ReplicaSet controller + kubelet, reduced to replica counts. */
  private syncWorkload(namespace: string, name: string): void {
    const d = this.objects.get(`apps/v1/deployments|${namespace}|${name}`);
    if (!d) return;
    const spec = d.spec as {
      replicas?: number;
      selector?: { matchLabels?: Record<string, string> };
      template?: Obj;
    };
    const want = spec.replicas ?? 1;
    const selector = Object.entries(spec.selector?.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const pods = this.list('v1/pods', namespace, selector);
    if (pods.length < want) {
      for (let i = pods.length; i < want; i++) {
        this.create(
          'v1/pods',
          namespace,
          {
            metadata: {
              generateName: `${name}-`,
              labels: clone(spec.template?.metadata?.labels ?? {}),
              annotations: clone(spec.template?.metadata?.annotations ?? {}),
              ownerReferences: [{ kind: 'ReplicaSet', name: `${name}-rs`, uid: String(d.metadata?.uid) }],
            },
            spec: clone(spec.template?.spec ?? {}),
            status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
          },
          false,
        );
      }
    } else if (pods.length > want) {
      // ReplicaSet ranking (simplified): not-ready first, then lowest pod-deletion-cost, then newest.
      const ready = (p: Obj) =>
        ((p.status?.conditions as { type: string; status: string }[]) ?? []).some(
          (c) => c.type === 'Ready' && c.status === 'True',
        );
      const cost = (p: Obj) =>
        Number(p.metadata?.annotations?.['controller.kubernetes.io/pod-deletion-cost'] ?? 0);
      const victims = pods
        .sort(
          (a, b) =>
            Number(ready(a)) - Number(ready(b)) ||
            cost(a) - cost(b) ||
            String(b.metadata?.creationTimestamp).localeCompare(String(a.metadata?.creationTimestamp)),
        )
        .slice(0, pods.length - want);
      for (const v of victims) {
        this.deletedPods.push(v.metadata?.name ?? '');
        this.remove('v1/pods', namespace, v.metadata?.name ?? '');
      }
    }
    const current = this.objects.get(`apps/v1/deployments|${namespace}|${name}`);
    if (!current) return;
    const n = this.list('v1/pods', namespace, selector).length;
    this.update('apps/v1/deployments', namespace, current, {
      ...clone(current),
      status: {
        observedGeneration: current.metadata?.generation,
        replicas: n,
        readyReplicas: n,
        updatedReplicas: n,
        availableReplicas: n,
      },
    });
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  private send(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private async readBody(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const query = Object.fromEntries(url.searchParams.entries());
    const contentType = req.headers['content-type']?.split(';')[0]?.trim();
    this.requests.push({ method, path: url.pathname, query, contentType });
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    if (token && this.hungTokens.has(token)) {
      this.held++;
      res.on('close', () => this.held--);
      return; // never answered; stop() destroys the connection
    }

    const failure = this.failures.find(
      (f) =>
        f.method === method &&
        f.remaining > 0 &&
        (typeof f.path === 'string' ? url.pathname.includes(f.path) : f.path.test(url.pathname)),
    );
    if (failure) {
      failure.remaining--;
      this.send(res, failure.code, status(failure.code, 'InjectedFailure', `injected ${failure.code}`));
      return;
    }

    const m = url.pathname.match(
      /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?(?:\/(status|scale))?$/,
    );
    if (!m) {
      this.send(
        res,
        404,
        status(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`),
      );
      return;
    }
    const resource = m[1] ? `v1/${m[5]}` : `${m[2]}/${m[3]}/${m[5]}`;
    const namespace = m[4]!;
    const name = m[6];
    const sub = m[7];
    const t = RESOURCES[resource];
    const scalable = resource === 'islet.dev/v1alpha1/runnerpools'; // the CRD's scale subresource
    if (!t || (sub === 'status' && !t.hasStatus) || (sub === 'scale' && !scalable)) {
      this.send(
        res,
        404,
        status(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`),
      );
      return;
    }
    const key = `${resource}|${namespace}|${name}`;
    // Without ?fieldManager= the real server derives the manager from the User-Agent.
    const manager = query.fieldManager || req.headers['user-agent']?.split('/')[0] || 'unknown';
    const plural = resource.split('/').pop();
    const notFound = () =>
      this.send(res, 404, status(404, 'NotFound', `${plural} "${name}" not found`, { name, kind: plural }));
    const conflict = () =>
      this.send(
        res,
        409,
        status(
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          { name, kind: plural },
        ),
      );

    if (!name) {
      if (method === 'GET' && (query.watch === 'true' || query.watch === '1'))
        return this.watch(res, resource, namespace, query);
      if (method === 'GET') {
        this.send(res, 200, {
          apiVersion: t.apiVersion,
          kind: t.listKind,
          metadata: { resourceVersion: String(this.rv) },
          items: this.list(resource, namespace, query.labelSelector),
        });
        return;
      }
      if (method === 'POST') {
        const body = (await this.readBody(req)) as Obj;
        if (body?.kind && body.kind !== t.kind) {
          this.send(res, 400, status(400, 'BadRequest', `kind ${body.kind} does not match ${t.kind}`));
          return;
        }
        const n = body?.metadata?.name;
        if (n && this.objects.has(`${resource}|${namespace}|${n}`)) {
          this.send(
            res,
            409,
            status(409, 'AlreadyExists', `${plural} "${n}" already exists`, { name: n, kind: plural }),
          );
          return;
        }
        if (!n && !body?.metadata?.generateName) {
          this.send(res, 422, status(422, 'Invalid', 'metadata.name: Required value'));
          return;
        }
        // The status of a resource with a status subresource is ignored on create.
        this.send(
          res,
          201,
          this.create(resource, namespace, body, t.hasStatus && resource !== 'v1/pods', manager),
        );
        return;
      }
      this.send(res, 405, status(405, 'MethodNotAllowed', `${method} not allowed on a collection`));
      return;
    }

    const current = this.objects.get(key);
    if (sub === 'scale') return this.scale(req, res, method, resource, namespace, current, manager, notFound);
    if (method === 'GET') {
      if (!current) return notFound();
      this.send(res, 200, clone(current));
      return;
    }
    if (method === 'DELETE') {
      if (!current) return notFound();
      this.remove(resource, namespace, name);
      this.send(res, 200, clone(current));
      return;
    }
    if (method !== 'PUT' && method !== 'PATCH') {
      this.send(res, 405, status(405, 'MethodNotAllowed', `${method} not allowed`));
      return;
    }
    const body = (await this.readBody(req)) as Obj;
    if (method === 'PATCH' && contentType === 'application/apply-patch+yaml' && !sub) {
      // Server-side apply (JSON is YAML: clients send JSON bodies).
      if (!query.fieldManager) {
        this.send(
          res,
          422,
          status(422, 'Invalid', 'fieldManager: Required value: is required for apply patch'),
        );
        return;
      }
      if (body?.kind && body.kind !== t.kind) {
        this.send(res, 400, status(400, 'BadRequest', `kind ${body.kind} does not match ${t.kind}`));
        return;
      }
      if (!current) {
        const created = this.create(
          resource,
          namespace,
          { ...clone(body), metadata: { ...body.metadata, name } },
          t.hasStatus,
          manager,
        );
        this.send(res, 201, created);
        return;
      }
      const owners = this.owners.get(key) ?? new Map<string, string>();
      this.owners.set(key, owners);
      const applied = applyConfiguration(current, body, owners, manager, query.force === 'true');
      if (!applied.ok) {
        this.send(
          res,
          409,
          status(
            409,
            'Conflict',
            `Apply failed with ${applied.conflicts.length} conflicts: ${applied.conflicts.join(', ')}`,
            { name, kind: plural },
          ),
        );
        return;
      }
      const next = { ...(applied.object as Obj) };
      if (t.hasStatus) next.status = clone(current.status);
      if (next.status === undefined) delete next.status;
      this.send(res, 200, this.update(resource, namespace, current, next, manager));
      return;
    }
    if (!current) return notFound();
    let candidate: Obj;
    if (method === 'PUT') {
      if (body?.metadata?.name && body.metadata.name !== name) {
        this.send(
          res,
          400,
          status(400, 'BadRequest', 'the name of the object does not match the name on the URL'),
        );
        return;
      }
      const rv = body?.metadata?.resourceVersion;
      if (rv && rv !== current.metadata?.resourceVersion) return conflict();
      candidate = clone(body);
    } else {
      try {
        if (contentType === 'application/json-patch+json') {
          candidate = applyJsonPatch(current, body as unknown as { op: string; path: string }[]) as Obj;
        } else if (
          contentType === 'application/merge-patch+json' ||
          contentType === 'application/strategic-merge-patch+json'
        ) {
          const rv = (body?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
          if (rv && rv !== current.metadata?.resourceVersion) return conflict();
          candidate = applyMergePatch(current, body) as Obj;
        } else {
          this.send(
            res,
            415,
            status(
              415,
              'UnsupportedMediaType',
              `the body of the request was in an unknown format: ${contentType}`,
            ),
          );
          return;
        }
      } catch (err) {
        this.send(res, 422, status(422, 'Invalid', String(err)));
        return;
      }
    }
    // Main resource writes keep the stored status; status writes change only the status.
    let next: Obj;
    if (sub === 'status') next = { ...clone(current), status: candidate.status };
    else if (t.hasStatus) next = { ...candidate, status: clone(current.status) };
    else next = candidate;
    if (next.status === undefined) delete next.status;
    if (!next.metadata) next.metadata = {};
    this.send(res, 200, this.update(resource, namespace, current, next, manager));
  }

  /** autoscaling/v1 Scale of a RunnerPool: .spec.replicas, .status.replicas, .status.selector. */
  private async scale(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    resource: string,
    namespace: string,
    current: Obj | undefined,
    manager: string,
    notFound: () => void,
  ): Promise<void> {
    if (!current) return notFound();
    const view = (o: Obj) => ({
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name: o.metadata?.name, namespace, resourceVersion: o.metadata?.resourceVersion },
      spec: { replicas: (o.spec?.replicas as number | undefined) ?? 0 },
      status: {
        replicas: (o.status?.replicas as number | undefined) ?? 0,
        selector: o.status?.selector as string | undefined,
      },
    });
    if (method === 'GET') return this.send(res, 200, view(current));
    if (method !== 'PUT' && method !== 'PATCH')
      return this.send(res, 405, status(405, 'MethodNotAllowed', `${method} not allowed`));
    const body = (await this.readBody(req)) as { spec?: { replicas?: unknown } } | undefined;
    const replicas = body?.spec?.replicas;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
      return this.send(res, 422, status(422, 'Invalid', 'spec.replicas: must be a non-negative integer'));
    const next = { ...clone(current), spec: { ...clone(current.spec), replicas } };
    this.send(res, 200, view(this.update(resource, namespace, current, next, manager)));
  }

  private watch(
    res: ServerResponse,
    resource: string,
    namespace: string,
    query: Record<string, string>,
  ): void {
    const selector = parseLabelSelector(query.labelSelector);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const w: WatchStream = {
      resource,
      namespace,
      selector,
      res,
      bookmarks: query.allowWatchBookmarks === 'true',
    };
    const rvParam = query.resourceVersion;
    if (!rvParam || rvParam === '0') {
      // "Start at most recent": synthetic ADDED events for the current state.
      for (const o of this.list(resource, namespace, query.labelSelector)) this.write(w, 'ADDED', o);
    } else {
      const from = Number(rvParam);
      if (!Number.isFinite(from) || from < this.oldestResumableRv) {
        this.write(w, 'ERROR', {
          ...status(410, 'Expired', `too old resource version: ${rvParam} (${this.oldestResumableRv})`),
        } as Obj);
        res.end();
        return;
      }
      for (const e of this.events) {
        if (
          e.rv > from &&
          e.resource === resource &&
          e.namespace === namespace &&
          selector(e.object.metadata?.labels)
        ) {
          this.write(w, e.type, e.object);
        }
      }
    }
    this.watches.add(w);
    const timeout = Number(query.timeoutSeconds);
    const timer =
      Number.isFinite(timeout) && timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      this.watches.delete(w);
    });
  }
}
