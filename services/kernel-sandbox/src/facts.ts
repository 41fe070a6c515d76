/**
 * The run_code contract's file-sandbox facts, verbatim. A failed run keeps them; a denied file
 * operation names the mode the run used. Tests quote these strings.
 */
import type { SandboxMode } from '@islet/protocol';

/** `full`: every kernel layer applied; `partial`: some could not be (the report says which); `none`: no launcher. */
export type Enforcement = 'full' | 'partial' | 'none';

/** `File sandbox: <mode>; enforcement: <e>; operation denied` */
export function fileSandboxDeniedText(mode: SandboxMode, enforcement: Enforcement): string {
  return `File sandbox: ${mode}; enforcement: ${enforcement}; operation denied`;
}

/** Kept by a failed run when the kernel layer could only be applied in part. */
export const FILE_SANDBOX_PARTIAL_TEXT = 'File sandbox enforcement is partial on this host.';

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
