export { createGatewayClient, type GatewayClient } from './gateway-client.ts';
export { mapOutcome } from './outcome-mapping.ts';
export { createRunExecutor, HandBackError, type RunExecutor } from './run-executor.ts';
export { createRunner, type Runner } from './runner.ts';
