/**
 * One App call's request as the gateway sends it (its headers and JSON body), for the App-leg probes
 * (`app-leg-count.ts`, `app-h1-parts.ts`): the same bytes in each, so their counts compare.
 */
export const sampleHeaders: Record<string, string> = {
  'content-type': 'application/json',
  'idempotency-key': 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7:12',
  'x-islet-tenant': 't_bench',
  'x-islet-run': 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7',
  'x-islet-operation-id': '8b225cba-4efa-514e-9d7f-683ab69cc45e',
  'webhook-id': 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7:12',
  'webhook-timestamp': '1765000000',
  'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
};
export const sampleBody = JSON.stringify({
  tool: 'ping',
  kind: 'tool',
  arguments: { i: 12, note: 'hello' },
  context: {
    tenant: 't_bench',
    run: 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7',
    session: 'sess_01JFZ8K4T1WJ0QX2M3N4P5R6S7',
    callIndex: 12,
    operationId: '8b225cba-4efa-514e-9d7f-683ab69cc45e',
    idempotencyKey: 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7:12',
  },
});
