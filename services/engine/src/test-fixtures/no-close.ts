/** Runs one program and never calls close(): idle hosts must not keep this process alive. */
import { createEngine } from '../index.ts';

const out = await createEngine().execute('return 6 * 7');
process.stdout.write(`${out.valueJson}\n`);
