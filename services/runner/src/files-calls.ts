/**
 * The built-in `files.*` bindings of a run, served here in the runner (the workspace is
 * sandbox-local: the gateway never sees these calls) and journaled like App calls, so a replayed
 * run sees exactly what it saw before (a read returns the content it read then, not a later write).
 *
 * Order per call, as for an App call: claim and markSent (run, index) → the file operation →
 * complete, with the run stream's `call` event. Unlike an App call, a file operation whose outcome was never journaled (`unknown`: the runner died between
 * markSent and complete) is performed again: write is atomic and writes the same bytes, read and
 * list have no effect, remove of an already removed file answers `removed: false`. So nothing is
 * lost and nothing is harmed by doing it twice.
 */
import type { Metrics } from '@islet/core';
import type { BindingCall, BindingOutcome } from '@islet/engine';
import {
  createFilesBinding,
  type Enforcement,
  type FilesBindingHandler,
  isFileSandboxDenial,
  type WorkspaceStore,
} from '@islet/kernel-sandbox';
import type { SandboxMode } from '@islet/protocol';
import {
  type CallJournal,
  type CallSource,
  callEventData,
  createCallProcessor,
  type LiveOutcome,
  type RunStore,
} from '@islet/runs';

interface FilesCallsOptions {
  journal: CallJournal;
  /** Builds the run stream's `call` event (the run store's, which seals it). */
  events: Pick<RunStore, 'callEvent'>;
  store: WorkspaceStore;
  metrics?: Metrics;
  run: { id: string; tenant: string; session: string; mode: SandboxMode };
  attempt: number;
  /** What the kernel layer achieves for this mode here; named in denials. */
  enforcement: Enforcement;
}

const failed = (reason: string, message: string): BindingOutcome => ({
  type: 'error',
  name: 'AppCallFailed',
  message,
  details: { reason },
});

export function createFilesCalls(opts: FilesCallsOptions) {
  const { run, attempt } = opts;
  const processor = createCallProcessor({ journal: opts.journal });
  let handler: FilesBindingHandler | undefined;

  async function perform(call: BindingCall): Promise<BindingOutcome> {
    if (!handler) {
      let workspaceDir: string;
      try {
        workspaceDir = await opts.store.ensure(run.tenant, run.session);
      } catch (err) {
        return failed(
          'invalid-session',
          `${call.binding}: this run's session has no workspace: ${(err as Error).message}`,
        );
      }
      handler = createFilesBinding({
        mode: run.mode,
        workspaceDir,
        workspace: opts.store.workspace(run.tenant, run.session),
        enforcement: opts.enforcement,
      });
    }
    return handler(call);
  }

  /** One `files.*` call, journaled. Same shape as the gateway client's answer; never throws. */
  async function call(call: BindingCall): Promise<LiveOutcome> {
    try {
      return await journaled(call);
    } catch (err) {
      // Redis unreachable: like an App call the gateway could not journal, the program gets a
      // failure it can catch; the entry stays claimed/sent, so a replay performs it again.
      opts.metrics?.bindingCalls.inc({ outcome: 'failed' });
      return {
        outcome: failed(
          'journal-unavailable',
          `${call.binding}: the call journal is unavailable: ${(err as Error).message}`,
        ),
      };
    }
  }

  async function journaled(call: BindingCall): Promise<LiveOutcome> {
    const started = process.hrtime.bigint();
    const source: CallSource = {
      connectionId: 'files',
      connectionName: 'files',
      name: call.binding.slice('files.'.length),
      kind: 'tool',
    };
    // The App calls' claim path (call-processor.ts): claim and markSent in one step, the outcome
    // journaled with the run stream's `call` event; only an unjournaled call differs (see above).
    const processed = await processor.process({
      run: { id: run.id, tenant: run.tenant, mode: run.mode, toolCallId: '', code: '' },
      attempt,
      call: { index: call.index, binding: call.binding, argsJson: call.argsJson, source },
      policy: 'allow',
      approval: 'stop',
      unjournaled: 'perform-again',
      send: () => perform(call),
      eventFor: (outcome) =>
        opts.events.callEvent(run.id, () => callEventData(call, source, outcome, started), started),
    });
    const { outcome, deliverySeq } = processed;
    if (processed.label !== 'replayed' && processed.label !== 'mismatch' && processed.label !== 'cancelled') {
      const label = outcome.type === 'result' ? 'result' : isFileSandboxDenial(outcome) ? 'denied' : 'failed';
      opts.metrics?.bindingCalls.inc({ outcome: label });
      opts.metrics?.bindingCallDuration.observe(
        { outcome: label },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    }
    return deliverySeq === undefined ? { outcome } : { outcome, deliverySeq };
  }

  return { call };
}
