// Compiles the service to dist/ with swc (type checking is `npm run typecheck`), the rollout board's
// browser script beside it, and pre-bundles the workflow code, so a worker starts without spending
// seconds in webpack.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const swc = require('@swc/core');
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist');
const SOURCE_DIRS = [
  'api',
  'application',
  'db',
  'engine',
  'domain',
  'workflows',
  'activities',
  'worker',
  'cli',
];
/** Browser code: compiled as the browser loads it, below, not as a Node module. */
const BROWSER_DIR = path.join(root, 'api', 'ui', 'browser');

function* sources(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (full !== BROWSER_DIR) yield* sources(full);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield full;
  }
}

const started = Date.now();
fs.rmSync(out, { recursive: true, force: true });
let count = 0;
for (const dir of SOURCE_DIRS) {
  for (const file of sources(path.join(root, dir))) {
    const target = path.join(out, path.relative(root, file)).replace(/\.ts$/, '.js');
    const { code, map } = await swc.transformFile(file, {
      sourceMaps: true,
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022', keepClassNames: true },
      module: { type: 'commonjs', strict: true },
    });
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, `${code}\n//# sourceMappingURL=${path.basename(target)}.map\n`);
    fs.writeFileSync(`${target}.map`, map);
    count++;
  }
}
fs.chmodSync(path.join(out, 'cli', 'main.js'), 0o755);

// The board's script, compiled by the helper the API itself uses when it runs from sources, into
// the file it serves when it runs from dist/ (api/ui/boardScript.ts).
const boardUi = path.join(out, 'api', 'ui');
const { compileBoardScript, BOARD_SCRIPT_SOURCE, BOARD_SCRIPT_FILE } = require(
  path.join(boardUi, 'boardScript.js'),
);
const boardScript = path.join(boardUi, BOARD_SCRIPT_FILE);
fs.mkdirSync(path.dirname(boardScript), { recursive: true });
fs.writeFileSync(boardScript, await compileBoardScript(path.join(root, 'api', 'ui', BOARD_SCRIPT_SOURCE)));

// The compiled bundler helper, so the prebuilt bundles are built as every other: one plain, one
// with the tracing interceptors (worker/workflowSource.ts picks by whether tracing is on).
const { bundleWorkflows, WORKFLOW_BUNDLE_FILES } = require(path.join(out, 'worker', 'workflowSource.js'));
const quiet = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };
for (const [kind, file] of Object.entries(WORKFLOW_BUNDLE_FILES)) {
  const { code } = await bundleWorkflows(kind === 'traced', quiet);
  fs.writeFileSync(path.join(out, file), code);
}
console.log(
  `built ${count} files, the board's script and the workflow bundles into dist/ in ${Date.now() - started} ms`,
);
