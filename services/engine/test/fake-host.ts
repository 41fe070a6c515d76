/**
 * A misbehaving sandbox host for tests, started through `wrapCommand` in place of the real one.
 * Usage: node fake-host.ts <mode>
 *   garbage      ready, then on `run` a frame whose payload is not JSON
 *   oversized    ready, then on `run` a frame header announcing 2 GiB
 *   unknown      ready, then on `run` a well-formed message of an unknown type
 *   exit         exits with code 3 before saying anything
 *   silent       never says ready
 */
const mode = process.argv[2];

function frame(payload: Buffer, length = payload.length): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(length, 0);
  header.writeUInt8(1, 4);
  return Buffer.concat([header, payload]);
}

if (mode === 'exit') process.exit(3);
if (mode !== 'silent')
  process.stdout.write(frame(Buffer.from(JSON.stringify({ t: 'ready', pid: process.pid }))));
process.stdin.on('data', () => {
  if (mode === 'garbage') process.stdout.write(frame(Buffer.from('this is not json')));
  if (mode === 'oversized') process.stdout.write(frame(Buffer.from('x'), 0x7fffffff));
  if (mode === 'unknown') process.stdout.write(frame(Buffer.from(JSON.stringify({ t: 'hello' }))));
});
process.stdin.on('end', () => process.exit(0));
setInterval(() => {}, 1000);
