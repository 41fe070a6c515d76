export * from './calls.ts';
export * from './kinds.ts';
export * from './problems.ts';
export * from './queues.ts';
export * from './records.ts';
export * from './run-request.ts';
