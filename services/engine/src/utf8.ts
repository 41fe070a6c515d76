/** The longest prefix of `text` whose UTF-8 form fits in `bytes`, cut at a character boundary. */
export function cutToBytes(text: string, bytes: number): string {
  if (bytes <= 0) return '';
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  let end = bytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}
