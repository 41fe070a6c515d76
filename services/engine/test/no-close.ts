/**
 * Runs one program. Without arguments it never calls close(): idle hosts must not keep this process
 * alive. With `close`, it awaits close() and prints `closed`: close() must resolve even though the
 * idle host no longer holds the event loop.
 */
import { createEngine } from '../src/index.ts';

const engine = createEngine();
const out = await engine.execute('return 6 * 7');
process.stdout.write(`${out.valueJson}\n`);
if (process.argv[2] === 'close') {
  await engine.close();
  process.stdout.write('closed\n');
}
