/**
 * A loopback App for the App-leg probes (`app-leg-count.ts`, `app-client-cpu.ts`): a child `node`
 * process answering every POST `200 {"ok":true}` once its body has been read, over connections
 * kept alive `keepAliveMs`. A child, so an in-process count (callgrind) sees only the client.
 */
import { type ChildProcess, spawn } from 'node:child_process';

export async function startLoopbackApp(
  keepAliveMs: number,
): Promise<{ app: ChildProcess; port: number; url: string }> {
  const source = `
const http = require('node:http');
const s = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
s.keepAliveTimeout = ${keepAliveMs};
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`;
  const app = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) =>
    app.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
  );
  return { app, port, url: `http://127.0.0.1:${port}/` };
}
