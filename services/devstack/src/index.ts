export {
  type Cluster,
  type ClusterOptions,
  type ProcessInfo,
  type RunnerSpec,
  startCluster,
} from './cluster.ts';
