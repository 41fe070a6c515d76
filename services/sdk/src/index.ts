export { runCli } from './cli.ts';
export {
  type CodeRun,
  createIsletClient,
  IsletApiError,
  type IsletClient,
  type Problem,
  type SubmitRun,
} from './client.ts';
