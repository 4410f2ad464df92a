import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { harnessValue } from '../harness';

/**
 * Workflow tests: the real workflow bundle (the one every integration test's worker runs) on the
 * jest run's dev server, with activities the test provides. The SDK's time-skipping server is a
 * download this machine cannot make, so the tests keep their timers to seconds.
 */
export async function workflowEnvironment(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({
    address: harnessValue('temporalAddress'),
    namespace: 'default',
  });
}

/** Runs `test` while a worker on its own task queue serves the workflows with `activities`. */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  activities: object,
  test: (taskQueue: string) => Promise<T>,
  options: { codePath?: string; taskQueue?: string } = {},
): Promise<T> {
  const taskQueue = options.taskQueue ?? `workflow-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowBundle: { codePath: options.codePath ?? harnessValue('workflowBundle') },
    activities,
  });
  return worker.runUntil(test(taskQueue));
}
