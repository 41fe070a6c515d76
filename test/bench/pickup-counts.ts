/** `node test/bench/pickup-counts.ts`: the runner's event-loop counts (`loop-counts.ts`, PROCESS=runner). */
process.env.PROCESS = 'runner';
await import('./loop-counts.ts');
