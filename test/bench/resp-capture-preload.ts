/**
 * Preloaded (`--import`) into a bench cluster's gateway and runner by resp-capture.ts: appends
 * each `OneCopyCommand`'s name and arguments, as `toWritable` is given them, to `RESP_CAPTURE`
 * (one JSON line a command; a Buffer as `{"b": base64}`).
 */
import { appendFileSync } from 'node:fs';
import { OneCopyCommand } from '../../services/core/src/lua-script.ts';

const file = process.env.RESP_CAPTURE as string;
const who = process.argv[1] ?? '';
const original = OneCopyCommand.prototype.toWritable;
OneCopyCommand.prototype.toWritable = function (this: OneCopyCommand, socket: object) {
  const self = this as unknown as { name: string; args: (string | Buffer)[] };
  const args = self.args.map((a) => (Buffer.isBuffer(a) ? { b: a.toString('base64') } : a));
  appendFileSync(file, `${JSON.stringify({ who, name: self.name, args })}\n`);
  return original.call(this, socket);
};
