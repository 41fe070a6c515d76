/**
 * The RESP bytes of one call site's arguments, by their position in its command, kept while the
 * same text comes there call after call (`OneCopyCommand`'s `memo`). A run's end with its job's
 * completion sends ~80–140 arguments of which most are the same every run (the queue's and the
 * tenant's keys, BullMQ's fixed terms, the end's field names: 62 of 76 in the runner's script
 * tests); each was measured (`Buffer.byteLength`) and written (`Buffer#write`) anew every call, two
 * native calls an argument on a cold path (test/bench/README.md, round 40 `bull-path`, round 41
 * `pickup-direct`). A text seen at its position twice in a row is encoded once (`$<length>\r\n`,
 * its bytes, `\r\n`) and copied from then on; a text that changes (a run's id, a time, a seal) is
 * encoded as before, and nothing is kept for it until it comes twice. The bytes are the same.
 */

/** Texts longer than this are never kept (a seal or a result is per run anyway). */
const KEEP_MAX_BYTES = 512;

export class ArgMemo {
  /** The last text at each position. */
  private readonly texts: (string | undefined)[] = [];
  /** Its framed bytes, once it came twice in a row. */
  private readonly framed: (Buffer | undefined)[] = [];
  /** Arguments copied from a kept encoding (tests read it). */
  hits = 0;
  /** Encodings kept (tests read it). */
  made = 0;

  /** `text`'s framed RESP bytes at position `at` when the same text came there last time; else undefined. */
  get(at: number, text: string): Buffer | undefined {
    if (this.texts[at] !== text) {
      this.texts[at] = text;
      this.framed[at] = undefined;
      return undefined;
    }
    let bytes = this.framed[at];
    if (!bytes) {
      const length = Buffer.byteLength(text);
      if (length > KEEP_MAX_BYTES) return undefined;
      bytes = Buffer.from(`$${length}\r\n${text}\r\n`, 'utf8');
      this.framed[at] = bytes;
      this.made++;
    }
    this.hits++;
    return bytes;
  }
}
