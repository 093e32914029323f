// Prints one plain closing line, "tests: N passed, N failed, N skipped", so
// a CI log can be read at a glance whatever the runner's own format, and the
// ten test files that took longest, which is where the suite's time goes.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped } = results;
    const root = `${process.cwd()}/`;
    const slowest = results.testResults
      .map((file) => ({ path: file.testFilePath.replace(root, ''), ms: file.perfStats.end - file.perfStats.start }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10)
      .map(({ path, ms }) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${path}`);
    process.stdout.write(`\nslowest test files:\n${slowest.join('\n')}\n`);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
