import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type Logger as SdkLogger } from '@temporalio/worker';

/** Where the workflow code the worker runs comes from. */
export type WorkflowSource =
  { workflowBundle: { codePath: string } | { code: string } } | { workflowsPath: string };

/** The prebuilt bundles `npm run build` writes next to the compiled code: without and with tracing. */
export const WORKFLOW_BUNDLE_FILES = { plain: 'workflow-bundle.js', traced: 'workflow-bundle-traced.js' };

/**
 * The workflow interceptors of a traced bundle: OpenTelemetry spans for workflows and the
 * activities they schedule, continuing the trace carried in the workflow's headers. They cost a
 * worker real time and memory even when no span is exported (bench/pull: the lease reaper's lag
 * more than doubled), so a worker with tracing off runs the plain bundle. Both bundles issue the
 * same commands, so workers with and without tracing can share a task queue and replay each
 * other's histories.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/**
 * The domain modules the workflows import (test/unit/workflowSource.test.ts keeps the list whole).
 * They are pure and keep no state of a workflow's: what they hold at module level (compiled
 * selectors, the CEL meter's running evaluation) is process-wide in the worker's main thread too.
 */
export const WORKFLOW_DOMAIN_MODULES = [
  'gates',
  'leaseTimer',
  'releaseProgress',
  'releases',
  'retry',
  'ruleLimits',
  'runbookRunProgress',
  'webhookAttempts',
];

/**
 * Modules evaluated once per worker thread and shared by every workflow in it, with whatever they
 * import. Any other module a workflow imports is evaluated again for each workflow (the SDK's
 * module isolation), which made rrule and cel-js most of a cached workflow's memory (ARCHITECTURE.md,
 * "Worker tuning"); evaluated for each workflow, the domain modules cost a cached lease workflow
 * 340–360 KB of RSS instead of 295–305 and its first task 4.9–5.4 ms of CPU instead of 4.5.
 */
export const SHARED_WORKFLOW_MODULES = [
  'rrule',
  '@marcbachmann/cel-js',
  ...WORKFLOW_DOMAIN_MODULES.map((name) => require.resolve(`../domain/${name}`)),
];

/** Bundles workflows/index, with the tracing interceptors when `traced` (the build, the test harness, benchmarks). */
export function bundleWorkflows(traced: boolean, logger?: SdkLogger): Promise<{ code: string }> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: traced ? WORKFLOW_INTERCEPTOR_MODULES : [],
    preloadModules: SHARED_WORKFLOW_MODULES,
    logger,
  });
}

/**
 * A prebuilt bundle when there is one (`npm run build` writes both next to the compiled code, and
 * the test harness builds a traced one per run): bundling takes seconds, so each worker should not
 * repeat it. Otherwise the worker bundles workflows/index at start-up (see worker/runtime.ts).
 */
export function workflowSource(traced: boolean, env: NodeJS.ProcessEnv = process.env): WorkflowSource {
  const explicit = env.FLIGHTDECK_WORKFLOW_BUNDLE;
  if (explicit) return { workflowBundle: { codePath: path.resolve(explicit) } };
  const prebuilt = path.join(__dirname, '..', WORKFLOW_BUNDLE_FILES[traced ? 'traced' : 'plain']);
  if (__filename.endsWith('.js') && fs.existsSync(prebuilt))
    return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath: require.resolve('../workflows') };
}
