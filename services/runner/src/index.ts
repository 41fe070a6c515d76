export {
  createGatewayClient,
  createHttpPost,
  type GatewayClient,
  type GatewayClientOptions,
  type PostFn,
} from './gateway-client.ts';
export { mapOutcome, type RunEnd } from './outcome-mapping.ts';
export { createRunExecutor, HandBackError, type RunExecutor, type RunExecutorDeps } from './run-executor.ts';
export { createRunner, type Runner } from './runner.ts';
