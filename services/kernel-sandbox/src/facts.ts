/**
 * The run_code contract's file-sandbox facts, verbatim. A failed run keeps them; a denied file
 * operation names the mode the run used. Tests quote these strings. The texts themselves live in
 * the engine's result-text module (it renders them into the result); this module only types them.
 */
import { PARTIAL_ENFORCEMENT_TEXT, sandboxDeniedLine } from '@islet/engine';
import type { SandboxMode } from '@islet/protocol';

/** `full`: every kernel layer applied; `partial`: some could not be (the report says which); `none`: no launcher. */
export type Enforcement = 'full' | 'partial' | 'none';

/** `File sandbox: <mode>; enforcement: <e>; operation denied` */
export function fileSandboxDeniedText(mode: SandboxMode, enforcement: Enforcement): string {
  return sandboxDeniedLine(mode, enforcement);
}

/** Kept by a failed run when the kernel layer could only be applied in part. */
export const FILE_SANDBOX_PARTIAL_TEXT = PARTIAL_ENFORCEMENT_TEXT;

/** The facts a failed run keeps, in the order the result text shows them. */
export function fileSandboxFacts(opts: {
  mode: SandboxMode;
  enforcement: Enforcement;
  denied: boolean;
}): string[] {
  const facts: string[] = [];
  if (opts.enforcement !== 'full') facts.push(FILE_SANDBOX_PARTIAL_TEXT);
  if (opts.denied) facts.push(fileSandboxDeniedText(opts.mode, opts.enforcement));
  return facts;
}
