/**
 * A lone call's POST body (call-body.ts `callBody`): the bytes `JSON.stringify` of
 * `{ attempt, ...call, takeover }` made, built with no object stringified on the call's path.
 */
import { describe, expect, it, vi } from 'vitest';
import { callBody } from './call-body.ts';
import { createGatewayClient } from './gateway-client.ts';

const strings = [
  '',
  'plain',
  'é✓😀',
  '"quoted" \\ back',
  '\n\t\u0000\u001f\u007f',
  '\ud800 lone \udfff',
  '</script>',
];

describe("a lone call's request body", () => {
  it('is the bytes of the call object stringified, with and without takeover', () => {
    for (const binding of ['conn_8f3a2b.ping', 'search', ...strings])
      for (const argsJson of ['null', '{"n":3}', ...strings.map((s) => JSON.stringify({ s }))])
        for (const [attempt, index] of [
          [1, 0],
          [2, 3],
          [17, 127],
        ] as const) {
          const call = { index, binding, argsJson };
          expect(callBody(attempt, call, false)).toBe(JSON.stringify({ attempt, ...call }));
          expect(callBody(attempt, call, true)).toBe(JSON.stringify({ attempt, ...call, takeover: true }));
        }
  });

  it('is made with no object stringified, on the first try and on a takeover', async () => {
    const bodies: string[] = [];
    let failFirst = true;
    const client = createGatewayClient({
      urls: ['http://gateway.invalid'],
      token: 't',
      batch: false,
      retryDelayMs: 1,
      post: async (_url, _headers, body) => {
        bodies.push(body);
        if (failFirst) {
          failFirst = false;
          return { status: 503, text: 'busy' };
        }
        return {
          status: 200,
          text: '{"outcome":{"type":"result","valueJson":"{\\"ok\\":true}"},"deliverySeq":4}',
        };
      },
    });
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      const live = await client.call('run-1', 2, { index: 5, binding: 'a.b', argsJson: '{"n":1}' });
      expect(live).toEqual({ outcome: { type: 'result', valueJson: '{"ok":true}' }, deliverySeq: 4 });
      const objects = stringify.mock.calls.filter(([value]) => typeof value === 'object' && value !== null);
      expect(objects).toHaveLength(0);
    } finally {
      stringify.mockRestore();
    }
    expect(bodies).toEqual([
      '{"attempt":2,"index":5,"binding":"a.b","argsJson":"{\\"n\\":1}"}',
      '{"attempt":2,"index":5,"binding":"a.b","argsJson":"{\\"n\\":1}","takeover":true}',
    ]);
  });
});
