/**
 * The engine's sandbox host process under islet-jail via `EngineOptions.wrapCommand`: runs complete in
 * every mode, the host really runs with seccomp, no_new_privs and a non-root uid, and a host whose
 * profile cannot be fully applied never starts (`sandbox-unavailable`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import { SANDBOX_MODES } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { wrapCommandForMode } from '../../services/kernel-sandbox/src/index.ts';

function childStatuses(): string[] {
  const out: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (new RegExp(`^PPid:\\s+${process.pid}$`, 'm').test(status)) out.push(status);
    } catch {}
  }
  return out;
}

describe.each(SANDBOX_MODES)('engine host under islet-jail, mode %s', (mode) => {
  it('runs a program and the host process carries the kernel layers', async () => {
    const engine = createEngine({ wrapCommand: wrapCommandForMode(mode, { require: 'full' }) });
    try {
      const out = await engine.execute('console.log("hi"); return 40 + 2;');
      expect(out.status).toBe('completed');
      expect(out.valueJson).toBe('42');
      expect(out.logs).toEqual([{ level: 'log', text: 'hi' }]);
      const hosts = childStatuses().filter((s) => /^Seccomp:\s+2$/m.test(s));
      expect(hosts.length).toBeGreaterThan(0);
      for (const s of hosts) {
        expect(s).toMatch(/^NoNewPrivs:\s+1$/m);
        if (process.getuid?.() === 0) expect(s).toMatch(/^Uid:\s+65534\s/m);
      }
    } finally {
      await engine.close();
    }
  });
});

describe('engine host without full enforcement', () => {
  it('fails the run with sandbox-unavailable and never starts the program', async () => {
    const engine = createEngine({
      wrapCommand: wrapCommandForMode('read-only', { require: 'full', testSkipLayer: 'landlock' }),
    });
    try {
      const out = await engine.execute('console.log("should not run"); return 1;');
      expect(out.status).toBe('failed');
      expect(out.failure?.kind).toBe('sandbox-unavailable');
      expect(out.failure?.message).toContain('landlock');
      expect(out.logs).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
