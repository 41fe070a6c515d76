import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `tests: N passed, N failed` (plus `, N skipped` when any), so
 * tools that read only a run's last lines (CI among them) count the tests without parsing
 * vitest's own summary. Failed modules (a file that did not load) count as failures too.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of testModules) {
      let cases = 0;
      for (const test of mod.children.allTests()) {
        cases++;
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (cases === 0 && mod.state() === 'failed') failed++;
    }
    const tail = skipped ? `, ${skipped} skipped` : '';
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${tail}\n`);
  }
}
