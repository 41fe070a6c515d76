export { type Cluster, type ClusterOptions, startCluster } from './cluster.ts';
