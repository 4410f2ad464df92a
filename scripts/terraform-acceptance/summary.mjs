// Prints the counts of a `go test -json` (test2json) run of the provider's acceptance tests and, for
// each failed test, the errors OpenTofu and the provider reported.
//   node summary.mjs results.jsonl
import fs from 'node:fs';

const outcome = new Map();
const output = new Map();
const other = [];
for (const line of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
  if (!line.startsWith('{')) {
    if (line.trim()) other.push(line);
    continue;
  }
  const event = JSON.parse(line);
  const test = event.Test?.split('/')[0];
  if (!test) continue;
  if (event.Action === 'output') output.set(test, (output.get(test) ?? '') + event.Output);
  if (['pass', 'fail', 'skip'].includes(event.Action) && !event.Test.includes('/')) {
    outcome.set(test, event.Action);
  }
}
const named = (action) => [...outcome].filter(([, a]) => a === action).map(([t]) => t);
const [passed, failed, skipped] = ['pass', 'fail', 'skip'].map(named);
console.log(
  `\nCtrlplane's Terraform provider acceptance tests on Flightdeck: ${passed.length} passed, ${failed.length} failed, ${skipped.length} skipped`,
);
for (const test of failed) {
  console.log(`  ✘ ${test}`);
  // OpenTofu's diagnostics: "Error: <summary>" and the lines that explain it.
  const lines = (output.get(test) ?? '').split('\n');
  const shown = [];
  lines.forEach((text, i) => {
    if (/Error: |expected|After applying this test step/.test(text)) {
      shown.push(
        ...lines
          .slice(i, i + 6)
          .map((l) => l.trim())
          .filter(Boolean),
      );
    }
  });
  for (const text of [...new Set(shown)].slice(0, 14)) console.log(`      ${text}`);
}
for (const test of skipped) console.log(`  - ${test}`);
if (outcome.size === 0) {
  console.log(other.slice(-20).join('\n'));
  process.exitCode = 1;
}
