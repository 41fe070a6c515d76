export { type Cluster, type ClusterOptions, startCluster } from './cluster.ts';
export { idleSnapshot, untilLiveOnly } from './restart-wait.ts';
