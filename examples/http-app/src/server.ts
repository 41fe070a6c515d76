/**
 * `npm start`: the example App on PORT (default 8787). ISLET_SIGNING_SECRET is the `whsec_…`
 * secret Islet returned when the connection was created (during a rotation, both secrets,
 * space-separated); APP_TOKEN, when set, is the bearer token the connection's headers carry.
 */
import { createServer } from 'node:http';
import { createApp } from './app.ts';

const secrets = (process.env.ISLET_SIGNING_SECRET ?? '').split(/\s+/).filter(Boolean);
if (secrets.length === 0) {
  console.error('set ISLET_SIGNING_SECRET to the whsec_… secret of the connection');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 8787);
const server = createServer(
  createApp({ secrets, ...(process.env.APP_TOKEN ? { token: process.env.APP_TOKEN } : {}) }),
);
server.listen(port, '127.0.0.1', () => console.log(`example App listening on http://127.0.0.1:${port}/`));
