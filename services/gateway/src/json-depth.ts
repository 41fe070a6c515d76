/**
 * Nesting depth of JSON text, measured on the text before it is parsed: a deeply nested body is
 * refused without building it, and nothing downstream (JSON.stringify, zod, the isolate's copy)
 * meets a structure deep enough to overflow a stack. Brackets inside strings do not count.
 */

/** True when `text` nests arrays/objects deeper than `max` levels. */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/** Depth of an already parsed value (iterative: a hostile value cannot overflow the stack here). */
export function valueDepthExceeds(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > max) return true;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return false;
}
