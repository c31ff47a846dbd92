/**
 * Prints one plain closing line, `N passed, N failed[, N skipped]`, after vitest's own report, and
 * names every test that passed only on its retry (CI retries a failed test once: see
 * vitest.config.ts), with what its failed run said, so a flaky test is seen and fixed rather than
 * hidden (vitest's own report shows only the passing run).
 */
import type { Reporter, TestCase, TestModule } from 'vitest/node';

/** The failed run's first error: its message's first lines and where in the project it was thrown. */
function firstFailure(test: TestCase): string[] {
  const error = test.result().errors?.[0];
  if (!error) return [];
  const message = String(error.message ?? error)
    .split('\n')
    .filter(Boolean)
    .slice(0, 3);
  const at = (error.stack ?? '')
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line.startsWith('at ') && !line.includes('node_modules') && (line.includes('/test/') || line.includes('/src/')));
  return [...message, ...(at ? [at.replace(`${process.cwd()}/`, '')] : [])].map((line) => `      ${line.slice(0, 240)}`);
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const flaky: string[][] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
        if (state === 'passed' && test.diagnostic()?.flaky)
          flaky.push([`  - ${module.moduleId.replace(`${process.cwd()}/`, '')} > ${test.fullName}`, ...firstFailure(test)]);
      }
      if (module.state() === 'failed' && module.children.size === 0) failed++; // a file that failed to load
    }
    const lines = [`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}${flaky.length ? `, ${flaky.length} flaky` : ''}`];
    if (flaky.length) lines.push('FLAKY (failed, then passed on retry; fix these — each with what its failed run said):', ...flaky.flat());
    process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
