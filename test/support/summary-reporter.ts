/**
 * Prints one plain closing line, `N passed, N failed[, N skipped]`, after vitest's own report, and
 * names every test that passed only on its retry (CI retries a failed test once: see
 * vitest.config.ts), so a flaky test is seen and fixed rather than hidden.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const flaky: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
        if (state === 'passed' && test.diagnostic()?.flaky) flaky.push(`${module.moduleId.replace(`${process.cwd()}/`, '')} > ${test.fullName}`);
      }
      if (module.state() === 'failed' && module.children.size === 0) failed++; // a file that failed to load
    }
    const lines = [`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}${flaky.length ? `, ${flaky.length} flaky` : ''}`];
    if (flaky.length) lines.push('FLAKY (failed, then passed on retry; fix these):', ...flaky.map((name) => `  - ${name}`));
    process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
