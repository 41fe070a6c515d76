/**
 * What an agent must know before writing a program, in the words of run_code's tool description
 * and the code API: the runtime's rules (fixed clock, no timers, JSON values), this deployment's
 * limits and switches, and which Apps the tenant has (bounded, so a tenant with hundreds of tools
 * does not flood the model's context: the code API has the rest).
 */
import type { IsletConfig } from '@islet/core';
import { RUN_CODE_LIMITS } from '@islet/protocol';
import { bindingsOf, type Connection } from './connections.ts';

const MAX_APPS = 20;
const MAX_TOOLS_PER_APP = 12;

/** `connections` undefined: the rules only (the code API, whose declarations list the Apps themselves). */
export function runtimeRulesText(config: IsletConfig, connections?: readonly Connection[]): string {
  const ceiling = Math.min(RUN_CODE_LIMITS.maxTimeoutMs, config.ISLET_RUN_CODE_MAX_TIMEOUT_MS);
  const budget =
    config.ISLET_RUNTIME_TIMEOUT_MS === 'true'
      ? `time budget ${RUN_CODE_LIMITS.defaultTimeoutMs} ms by default, timeoutMs up to ${ceiling} ms`
      : `time budget ${RUN_CODE_LIMITS.defaultTimeoutMs} ms (timeoutMs is not available here)`;
  const wider =
    config.ISLET_RUNTIME_SANDBOX_PERMISSIONS === 'true'
      ? 'sandbox_permissions with a justification asks a person for wider file access'
      : 'sandbox_permissions is not available here';
  const lines = [
    'Runtime rules: JavaScript, the body of an async function (top-level await and return).',
    'Date.now() and new Date() are fixed at the run start and Math.random() is seeded, so a replayed run makes the same calls.',
    'No timers (setTimeout, setInterval), no fetch or network, no require/import, no Node.js APIs: reach the outside through apps.',
    'Returned values and App arguments must be plain JSON: no Date (return date.toISOString()), Map, Set, bigint, NaN or functions.',
    `Limits: ${budget}; ${RUN_CODE_LIMITS.memoryMb} MiB heap; printed lines and the returned value share ${RUN_CODE_LIMITS.outputBytes / 1_048_576} MiB; ${wider}.`,
    'An uncaught error reports its line and column; App errors are AppCallFailed (details.reason, details.body), AppCallDenied or AppInputRequired.',
  ];
  if (!connections) return lines.join('\n');
  const apps = connections.slice(0, MAX_APPS).map((c) => {
    const tools = bindingsOf(c).map((b) => b.binding.slice(b.binding.indexOf('.') + 1));
    const shown = tools.slice(0, MAX_TOOLS_PER_APP).join(', ');
    return `${c.slug} (${shown}${tools.length > MAX_TOOLS_PER_APP ? `, … ${tools.length - MAX_TOOLS_PER_APP} more` : ''})`;
  });
  if (apps.length === 0) lines.push('Apps: none yet (a tenant adds them with POST /v1/connections).');
  else
    lines.push(
      `Apps, called as await apps.<app>.<tool>(args): ${apps.join('; ')}` +
        (connections.length > MAX_APPS ? `; … ${connections.length - MAX_APPS} more Apps` : '') +
        '.',
    );
  return lines.join('\n');
}
