/**
 * The Python client (clients/python) against a real local stack: its unittest suite runs in
 * Debian's python3 with ISLET_URL / ISLET_API_KEY pointing at a cluster this file starts, and
 * every test in it must have passed (none skipped, none missing).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLIENT_DIR = fileURLToPath(new URL('../../clients/python', import.meta.url));

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ modes: ['read-only', 'workspace-write'] });
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

function unittest(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-m', 'unittest', 'discover', '-s', 'tests', '-v'], {
      cwd: CLIENT_DIR,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** `test_name (module.Class.test_name) ... ok` lines of unittest's verbose report. */
function outcomes(output: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of output.matchAll(
    /^(test_\w+) \([\w.]+\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure)$/gm,
  ))
    found.set(m[1]!, m[2]!);
  return found;
}

describe('the Python client on the local stack', () => {
  it('passes its whole unittest suite', async () => {
    const { code, output } = await unittest({ ISLET_URL: cluster.url, ISLET_API_KEY: cluster.devKey });
    const results = outcomes(output);
    const ran = Number(/^Ran (\d+) tests?/m.exec(output)?.[1] ?? 0);
    expect({ code, failed: [...results].filter(([, r]) => r !== 'ok') }, output).toEqual({
      code: 0,
      failed: [],
    });
    expect(results.size, output).toBe(ran);
    // The suite covers each part of the client; a renamed or dropped test fails here.
    for (const name of [
      'test_run_returns_the_final_record',
      'test_run_follows_the_stream_when_the_answer_is_not_held',
      'test_a_refused_request_is_an_islet_error_with_the_problem',
      'test_an_unreachable_gateway_names_the_url',
      'test_events_end_with_the_final_status_and_resume_after_an_id',
      'test_allowing_wider_access_lets_the_run_finish',
      'test_cancel_ends_a_waiting_run',
      'test_put_list_get_delete_and_a_program_reads_the_file',
    ])
      expect(results.get(name), name).toBe('ok');
    expect(output).toMatch(/^OK$/m);
  }, 180_000);

  it('without ISLET_URL the suite skips with what to set, and says so', async () => {
    const { code, output } = await unittest({});
    expect(code).toBe(0);
    expect(output).toContain('set ISLET_URL and ISLET_API_KEY');
    const results = outcomes(output);
    expect(results.get('test_run_returns_the_final_record')).toMatch(/^skipped/);
    // The parts that need no stack still ran.
    expect(results.get('test_an_unreachable_gateway_names_the_url')).toBe('ok');
  });
});
