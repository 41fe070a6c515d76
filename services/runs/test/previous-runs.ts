/**
 * A previous release's journal scripts and readers, from git (`git show <rev>:services/runs/src/…`),
 * for the tests that hold this release's journal entries to what that release writes and reads
 * (complete-splice.test.ts, claim-text.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LuaScript } from '@islet/core/lua-script';
import { compactLua } from '../src/lua-scripts.ts';
import type { Sealer } from '../src/types.ts';

type Views = typeof import('../src/journal-views.ts');

/** `path` (under services/runs/src) as release `rev` has it. */
export function previousSource(rev: string, path: string): string {
  return execFileSync('git', ['show', `${rev}:services/runs/src/${path}`], { encoding: 'utf8' });
}

/**
 * Release `rev`'s `lua/<name>.lua` as its lua-scripts.ts sent it: its includes (from `rev` too)
 * inlined once each, its parameters filled in, compacted.
 */
export function previousLuaSource(
  rev: string,
  name: string,
  params: Record<string, string | number>,
): string {
  const included = new Set<string>();
  const expand = (text: string): string =>
    text.replace(/^--- @include "([a-z0-9-]+)"$/gm, (_line, inc: string) => {
      if (included.has(inc)) return '';
      included.add(inc);
      return expand(previousSource(rev, `lua/includes/${inc}.lua`)).trimEnd();
    });
  return compactLua(
    expand(previousSource(rev, `lua/${name}.lua`)).replace(/\$\{([A-Z0-9_]+)\}/g, (_m, key: string) =>
      String(params[key]),
    ),
  );
}

/** Release `rev`'s script `path` with its `${name}` placeholders given. */
export function previousScript(rev: string, path: string, fill: Record<string, string> = {}): LuaScript {
  let text = previousSource(rev, path);
  for (const [name, value] of Object.entries(fill)) text = text.replaceAll(`\${${name}}`, value);
  return new LuaScript(text);
}

/** Release `rev`'s journal readers (journal-views.ts and journal-entry-layout.ts; their other imports are type-only). */
export async function previousJournalViews(
  rev: string,
  sealer: Sealer,
): Promise<ReturnType<Views['journalViews']>> {
  const dir = mkdtempSync(join(tmpdir(), 'islet-prev-views-'));
  try {
    for (const file of ['journal-views.ts', 'journal-entry-layout.ts'])
      writeFileSync(join(dir, file), previousSource(rev, file));
    const m = (await import(join(dir, 'journal-views.ts'))) as Views;
    return m.journalViews(sealer, sealer);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
