/**
 * A misbehaving sandbox host for tests, started through `wrapCommand` in place of the real one.
 * Usage: node fake-host.ts <mode>
 *   garbage      ready, then on `run` a frame whose payload is not JSON
 *   oversized    ready, then on `run` a frame header announcing 2 GiB
 *   unknown      ready, then on `run` a well-formed message of an unknown type
 *   exit         exits with code 3 before saying anything
 *   silent       never says ready
 *   pieces       ready, then two `logs` messages written cut at every byte boundary in turn: each
 *                piece written when the engine sends anything (the test answers each of its reads)
 *   cut          ready, then on `run` a frame's header and part of its payload, and SIGKILL
 *   eof          ready, then on `run` one whole `logs` message, and exit code 0
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
const logs = (text: string) => frame(Buffer.from(JSON.stringify({ t: 'logs', lines: [['log', text]] })));
const both = Buffer.concat([logs('first é'), logs('second')]);
const pieces: Buffer[] = [];
for (let k = 1; k < both.length; k++) pieces.push(both.subarray(0, k), both.subarray(k));
process.stdin.on('data', () => {
  if (mode === 'pieces' && pieces.length > 0) process.stdout.write(pieces.shift()!);
  if (mode === 'cut') {
    process.stdout.write(frame(Buffer.from('{"t":"logs","lines":[["log","never whole"]]}')).subarray(0, 20));
    process.kill(process.pid, 'SIGKILL');
  }
  if (mode === 'eof') process.stdout.write(logs('last words'), () => process.exit(0));
  if (mode === 'garbage') process.stdout.write(frame(Buffer.from('this is not json')));
  if (mode === 'oversized') process.stdout.write(frame(Buffer.from('x'), 0x7fffffff));
  if (mode === 'unknown') process.stdout.write(frame(Buffer.from(JSON.stringify({ t: 'hello' }))));
});
process.stdin.on('end', () => process.exit(0));
setInterval(() => {}, 1000);
