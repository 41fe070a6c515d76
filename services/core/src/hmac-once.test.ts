import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { hmacSha256, hmacSha256Key } from './hmac-once.ts';

describe('hmacSha256 (two one-shot hashes over a key prepared once)', () => {
  it("gives RFC 4231's HMAC-SHA256 test vectors", () => {
    // Test cases 1, 2 and 6 (a 131-byte key: hashed first, as a key longer than the block is).
    const cases: [Buffer | string, string, string][] = [
      [
        Buffer.alloc(20, 0x0b),
        'Hi There',
        'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7',
      ],
      [
        'Jefe',
        'what do ya want for nothing?',
        '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
      ],
      [
        Buffer.alloc(131, 0xaa),
        'Test Using Larger Than Block-Size Key - Hash Key First',
        '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
      ],
    ];
    for (const [key, message, mac] of cases) {
      expect(hmacSha256(hmacSha256Key(key), '', message, 'hex')).toBe(mac);
      // The message split anywhere between head and body is the same message.
      expect(hmacSha256(hmacSha256Key(key), message.slice(0, 5), message.slice(5), 'hex')).toBe(mac);
    }
  });

  it("is createHmac's digest for keys around the block size and for any text", () => {
    const keys: (string | Buffer)[] = [
      '',
      'islet-journal-args',
      'ключ 🔑',
      ...[1, 32, 63, 64, 65, 200].map((n) => randomBytes(n)),
    ];
    const head = 'run_1\u00003\u0000';
    // Around the 16 KiB kept for a first hash's input (one byte under, at, over), and far over it.
    const edge = 16 * 1024 - 64 - head.length;
    const bodies = [
      '',
      '{"a":1}',
      'ünïcødé 🌍',
      'lone \ud800 surrogate',
      'y'.repeat(edge - 1),
      'y'.repeat(edge),
      'y'.repeat(edge + 1),
      'x'.repeat(100_000),
      'short after long',
    ];
    for (const key of keys) {
      const prepared = hmacSha256Key(key);
      for (const body of bodies) {
        for (const encoding of ['base64', 'base64url', 'hex'] as const) {
          expect(hmacSha256(prepared, head, body, encoding)).toBe(
            createHmac('sha256', key).update(`${head}${body}`).digest(encoding),
          );
        }
      }
    }
  });

  it('does not change the key it was given, and one prepared key serves any number of messages', () => {
    const raw = randomBytes(40);
    const copy = Buffer.from(raw);
    const prepared = hmacSha256Key(raw);
    const first = hmacSha256(prepared, 'a.', 'b', 'base64');
    hmacSha256(prepared, 'c.', 'd'.repeat(10_000), 'base64');
    expect(hmacSha256(prepared, 'a.', 'b', 'base64')).toBe(first);
    expect(raw.equals(copy)).toBe(true);
  });

  it('clears the kept buffer after each message it held (key blocks and message bytes)', () => {
    const prepared = hmacSha256Key('k');
    const fill = vi.spyOn(Buffer.prototype, 'fill');
    try {
      hmacSha256(prepared, 'run_1\u00003\u0000', '{"secret":"s3cr3t"}', 'hex');
      const size = 64 + 'run_1\u00003\u0000'.length + '{"secret":"s3cr3t"}'.length;
      expect(fill.mock.calls).toEqual([[0, 0, size]]);
      fill.mockClear();
      // A message too long for it has a buffer of its own, dropped with it.
      hmacSha256(prepared, 'h.', 'x'.repeat(20_000), 'hex');
      expect(fill).not.toHaveBeenCalled();
    } finally {
      fill.mockRestore();
    }
  });
});
