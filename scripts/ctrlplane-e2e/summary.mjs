// Prints the counts of a Playwright JSON report and names each failed and skipped test.
//   node summary.mjs results.json
import fs from 'node:fs';

const report = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const failed = [];
const skipped = [];
function walk(suite, titles) {
  for (const child of suite.suites ?? []) walk(child, [...titles, child.title]);
  for (const spec of suite.specs ?? []) {
    const title = [...titles, spec.title].filter(Boolean).join(' › ');
    const results = spec.tests.flatMap((t) => t.results);
    if (!spec.ok) failed.push(title);
    else if (spec.tests.every((t) => t.status === 'skipped')) {
      const why = results.flatMap((r) => r.annotations ?? []).find((a) => a.type === 'skip');
      skipped.push(`${title}${why?.description ? ` (${why.description})` : ''}`);
    }
  }
}
for (const suite of report.suites) walk(suite, [suite.title]);
const { expected, unexpected, flaky, skipped: skippedCount } = report.stats;
console.log(
  `\nCtrlplane e2e API tests on Flightdeck: ${expected} passed, ${unexpected} failed, ${flaky} flaky, ${skippedCount} skipped`,
);
for (const title of failed) console.log(`  ✘ ${title}`);
for (const title of skipped) console.log(`  - ${title}`);
