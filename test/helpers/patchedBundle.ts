import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { SHARED_WORKFLOW_MODULES } from '../../worker/workflowSource';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The change the patched bundle carries: each look at a running release first reads its rules, a
 * new activity call behind `patched`. Releases already past that point on the old code replay
 * without it (and keep running without it); the others take it.
 */
export const PATCH_ID = 'read-rules-at-each-look';
const LOOK = 'const progress = await databaseSteps.releaseProgress(releaseId);';
const SDK_IMPORT_END = "} from '@temporalio/workflow';";

/**
 * A workflow bundle whose release workflow carries a change made the way ARCHITECTURE.md says
 * workflow code must change (PATCH_ID). It is today's workflows/releaseRun.ts with that edit, so the test follows
 * the code as it changes. Returns the bundle's path.
 */
export async function buildPatchedBundle(): Promise<string> {
  const source = await readFile(path.join(ROOT, 'workflows', 'releaseRun.ts'), 'utf8');
  for (const expected of [LOOK, SDK_IMPORT_END])
    if (!source.includes(expected)) throw new Error(`workflows/releaseRun.ts no longer has "${expected}"`);
  const patched = source
    .replace(LOOK, `if (patched('${PATCH_ID}')) await databaseSteps.releaseRules(releaseId);\n      ${LOOK}`)
    .replace(SDK_IMPORT_END, `  patched,\n${SDK_IMPORT_END}`)
    .replace(/from '\.\.\/([^']+)'/g, (_match, file: string) => `from '${path.join(ROOT, file)}'`)
    .replace(/from '\.\/([^']+)'/g, (_match, file: string) => `from '${path.join(ROOT, 'workflows', file)}'`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flightdeck-patched-'));
  const patchedRun = path.join(dir, 'releaseRun.ts');
  await writeFile(patchedRun, patched);
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(ROOT, 'workflows'),
    preloadModules: SHARED_WORKFLOW_MODULES,
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
    webpackConfigHook: (config) => ({
      ...config,
      resolve: {
        ...config.resolve,
        modules: [...(config.resolve?.modules ?? ['node_modules']), path.join(ROOT, 'node_modules')],
      },
      plugins: [...(config.plugins ?? []), redirect('./releaseRun', patchedRun)],
    }),
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, code);
  return bundlePath;
}

/** A webpack plugin that resolves `request` to `target` wherever it is imported. */
function redirect(request: string, target: string) {
  return {
    apply(compiler: {
      hooks: { normalModuleFactory: { tap: (name: string, fn: (factory: ModuleFactory) => void) => void } };
    }) {
      compiler.hooks.normalModuleFactory.tap('RedirectModule', (factory) => {
        factory.hooks.beforeResolve.tap('RedirectModule', (data) => {
          if (data.request === request) data.request = target;
        });
      });
    },
  };
}

interface ModuleFactory {
  hooks: { beforeResolve: { tap: (name: string, fn: (data: { request: string }) => void) => void } };
}
