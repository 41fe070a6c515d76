// Runner pods of a rendered release as they will run: helm-rendered Deployments, plus the ones the
// operator builds from the rendered RunnerPools with the configuration the chart gives it.
import {
  buildDeployment,
  operatorConfigSchema,
  parseSpec,
  podDefaultsFromConfig,
  type RunnerPool,
} from '@islet/operator';
import type { K8sObject } from './helm.ts';

export const find = (objs: K8sObject[], kind: string, pred: (o: K8sObject) => boolean = () => true) =>
  objs.filter((o) => o.kind === kind && pred(o));

/** The operator's configuration as the chart renders it (literal env values of its Deployment). */
export function operatorConfigOf(objs: K8sObject[]) {
  const op = find(
    objs,
    'Deployment',
    (o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'operator',
  )[0];
  if (!op) return undefined;
  const env = Object.fromEntries(
    (op.spec.template.spec.containers[0].env as { name: string; value?: string }[])
      .filter((e) => e.value !== undefined)
      .map((e) => [e.name, e.value]),
  );
  return operatorConfigSchema.parse(env);
}

/** Runner Deployments of a scenario: rendered by helm, or built by the operator from the RunnerPools. */
export function runnerDeployments(objs: K8sObject[]): K8sObject[] {
  const fromHelm = find(
    objs,
    'Deployment',
    (o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'runner',
  );
  const config = operatorConfigOf(objs);
  const fromOperator = find(objs, 'RunnerPool').map((p) => {
    const parsed = parseSpec(p.spec);
    if (!parsed.ok) throw new Error(parsed.message);
    const d = buildDeployment(
      p as unknown as RunnerPool,
      parsed.spec,
      parsed.spec.minReplicas,
      podDefaultsFromConfig(config!),
    );
    return d as unknown as K8sObject;
  });
  return [...fromHelm, ...fromOperator];
}
