/**
 * Every way the App client's answer reader (app-h1-answer.ts) can be handed `text`: whole, cut in
 * two at each byte, and byte by byte — how a socket's reads may split it.
 */
export function feeds(text: string): Buffer[][] {
  const b = Buffer.from(text, 'latin1');
  const out: Buffer[][] = [[b]];
  for (let i = 1; i < b.length; i++) out.push([b.subarray(0, i), b.subarray(i)]);
  out.push(Array.from(b, (x) => Buffer.from([x])));
  return out;
}
