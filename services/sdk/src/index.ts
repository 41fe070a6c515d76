export { createIsletApi, type IsletApi, type Schemas } from './api.ts';
export {
  type CodeRun,
  createIsletClient,
  type Decision,
  FINAL_STATUSES,
  IsletApiError,
  type IsletClient,
  IsletConnectionError,
  type Problem,
  type SubmitRun,
} from './client.ts';
export type { components, operations, paths } from './generated/openapi.ts';
export { parseEventStream, type StreamEvent } from './sse.ts';
