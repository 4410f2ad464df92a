import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type Logger as SdkLogger } from '@temporalio/worker';

/** Where the workflow code the worker runs comes from. */
export type WorkflowSource = { workflowBundle: { codePath: string } } | { workflowsPath: string };

export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';

/**
 * Workflow interceptors every bundle must contain: OpenTelemetry spans for workflows and the
 * activities they schedule, continuing the trace carried in the workflow's headers. A prebuilt
 * bundle cannot take interceptors later, so every bundle is built through `bundleWorkflows`.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/** Bundles workflows/index with our workflow interceptors (the build, the test harness, benchmarks). */
export function bundleWorkflows(logger?: SdkLogger): Promise<{ code: string }> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    logger,
  });
}

/**
 * A prebuilt bundle when there is one (`npm run build` writes it next to the compiled code, and the
 * test harness builds one per run): bundling takes seconds, so each worker should not repeat it.
 * Otherwise the worker bundles workflows/index at start-up.
 */
export function workflowSource(env: NodeJS.ProcessEnv = process.env): WorkflowSource {
  const explicit = env.FLIGHTDECK_WORKFLOW_BUNDLE;
  if (explicit) return { workflowBundle: { codePath: path.resolve(explicit) } };
  const prebuilt = path.join(__dirname, '..', WORKFLOW_BUNDLE_FILE);
  if (__filename.endsWith('.js') && fs.existsSync(prebuilt))
    return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath: require.resolve('../workflows') };
}
