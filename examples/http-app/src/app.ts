/**
 * An Islet http App: Islet POSTs one JSON request per binding call to this App's URL and the
 * answer's JSON is what the program's `await apps.<connection>.<tool>(args)` returns.
 *
 * Copy this file and replace `tools` with your own. What it shows (docs/apps.md is the contract):
 * - every request is checked with the `standardwebhooks` package against the connection's
 *   `whsec_…` secret before anything else; a bad or stale signature gets 401 and does nothing;
 * - a header the connection was created with (here `Authorization: Bearer <APP_TOKEN>`) arrives
 *   on every request, so the App can also check a token of its own;
 * - `idempotency-key` (`<run>:<call index>`) makes a retried call return the first answer instead
 *   of acting twice;
 * - an answer `{"inputRequired": {"message": "…"}}` asks the person for more input;
 * - a 4xx/5xx answer's body reaches the program's error (`details.body`) and the run record.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/** What Islet sends (the signed body). */
export interface AppRequest {
  tool: string;
  kind: 'tool' | 'resource' | 'prompt';
  arguments: Record<string, unknown>;
  /** Present when a person answered an earlier `inputRequired` for this call. */
  input?: unknown;
  context: {
    tenant: string;
    run: string;
    session: string;
    callIndex: number;
    operationId: string;
    idempotencyKey: string;
  };
}

/** A tool's answer: a result (any JSON), an ask for input, or an error with an HTTP status. */
export type ToolAnswer =
  | { result: unknown }
  | { inputRequired: string }
  | { status: number; error: string; [more: string]: unknown };

export type Tool = (args: Record<string, unknown>, request: AppRequest) => ToolAnswer;

export interface AppOptions {
  /** The connection's signing secret, `whsec_…`; during a rotation, both the new and the old one. */
  secrets: string[];
  /** When set, requests must also carry `Authorization: Bearer <token>` (a connection header). */
  token?: string;
  tools?: Record<string, Tool>;
}

/** An in-memory invoice book: enough to show idempotency and errors. */
export function invoiceTools(): Record<string, Tool> {
  const invoices = new Map<string, { id: string; customer: string; amountCents: number }>();
  return {
    create_invoice: (args) => {
      const { customer, amountCents } = args;
      if (typeof customer !== 'string' || typeof amountCents !== 'number')
        return { status: 422, error: 'create_invoice needs {"customer": string, "amountCents": number}' };
      const invoice = { id: `inv_${invoices.size + 1}`, customer, amountCents };
      invoices.set(invoice.id, invoice);
      return { result: invoice };
    },
    get_invoice: (args) => {
      const invoice = invoices.get(String(args.id));
      return invoice ? { result: invoice } : { status: 404, error: `no invoice ${String(args.id)}` };
    },
    refund: (args, request) => {
      // The person's answer comes back as `input` on the same call.
      if (request.input === undefined) return { inputRequired: `Refund ${String(args.id)} in full?` };
      return { result: { refunded: String(args.id), answer: request.input } };
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** The request handler; mount it on any node:http server. */
export function createApp(options: AppOptions) {
  const verifiers = options.secrets.map((s) => new Webhook(s));
  const tools = options.tools ?? invoiceTools();
  // First answers by idempotency key: a retried call gets the same answer and acts once.
  // (Keep these in your database, with the effect, in a real App.)
  const answered = new Map<string, { status: number; body: unknown }>();

  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // Verify the exact bytes received, before parsing them.
      const raw = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      let request: AppRequest | undefined;
      for (const verifier of verifiers) {
        try {
          request = verifier.verify(raw, headers) as AppRequest;
          break;
        } catch (err) {
          if (!(err instanceof WebhookVerificationError)) throw err;
        }
      }
      if (!request) return send(res, 401, { error: 'the request is not signed by Islet' });
      if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`)
        return send(res, 401, { error: 'missing or wrong Authorization' });
      // The signed body names the run: a header that disagrees was not sent by Islet.
      if (req.headers['x-islet-run'] !== request.context.run)
        return send(res, 400, { error: 'x-islet-run does not match the signed body' });

      const key = request.context.idempotencyKey;
      const earlier = answered.get(key);
      if (earlier) return send(res, earlier.status, earlier.body);
      const tool = tools[request.tool];
      const answer: ToolAnswer = tool
        ? tool(request.arguments, request)
        : { status: 404, error: `no tool ${request.tool}; this App has ${Object.keys(tools).join(', ')}` };
      let status = 200;
      let body: unknown;
      if ('result' in answer) body = answer.result;
      else if ('inputRequired' in answer) body = { inputRequired: { message: answer.inputRequired } };
      else {
        const { status: s, ...rest } = answer;
        status = s;
        body = rest;
      }
      // An ask for input is not an effect: the call comes again with the person's answer.
      if (!('inputRequired' in answer)) answered.set(key, { status, body });
      send(res, status, body);
    });
  };
}
