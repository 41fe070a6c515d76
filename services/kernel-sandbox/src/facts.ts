/**
 * The run_code contract's file-sandbox denial, verbatim: a denied file operation names the mode
 * the run used. The texts themselves live in the engine's result-text module (it renders them,
 * and the partial-enforcement fact, into the result); this module only types the denial.
 */
import { sandboxDeniedLine } from '@islet/engine';
import type { SandboxMode } from '@islet/protocol';

/** `full`: every kernel layer applied; `partial`: some could not be (the report says which); `none`: no launcher. */
export type Enforcement = 'full' | 'partial' | 'none';

/** `File sandbox: <mode>; enforcement: <e>; operation denied` */
export function fileSandboxDeniedText(mode: SandboxMode, enforcement: Enforcement): string {
  return sandboxDeniedLine(mode, enforcement);
}
