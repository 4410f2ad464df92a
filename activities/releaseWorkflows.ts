import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { StartableRelease } from '../db/releaseFanout';
import { wakeSignal } from '../workflows/definitions';
import { workflowIds } from '../workflows/ids';
import { releaseWorkflow } from '../workflows/release';
import { searchAttributePairs } from '../workflows/searchAttributes';

/**
 * Temporal calls about release workflows, shared by the fan-out activities and the outbox relay.
 * Each is safe to repeat: starts are deduplicated by workflow id, and a wake for a workflow that
 * does not run (not started yet, or finished) is dropped — it reads the database when it runs.
 */

const CONCURRENCY = 32;

async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

export function releaseStartOptions(taskQueue: string, release: StartableRelease) {
  return {
    workflowId: workflowIds.release(release.id),
    taskQueue,
    args: [{ releaseId: release.id }] as [{ releaseId: string }],
    typedSearchAttributes: searchAttributePairs({
      workspaceId: release.workspaceId,
      deploymentId: release.deploymentId,
      environmentId: release.environmentId,
      resourceId: release.resourceId,
      versionId: release.versionId,
      releaseId: release.id,
    }),
  };
}

export async function startReleaseWorkflows(
  client: Client,
  taskQueue: string,
  releases: readonly StartableRelease[],
): Promise<void> {
  await inParallel(releases, async (release) => {
    try {
      await client.workflow.start(releaseWorkflow, {
        ...releaseStartOptions(taskQueue, release),
        // A finished release does not run again by accident; a redeploy restarts it on purpose.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  });
}

/** Wakes a workflow if it runs; one that has not started or has finished reads the database when it runs. */
export async function signalIfRunning(client: Client, workflowId: string): Promise<void> {
  try {
    await client.workflow.getHandle(workflowId).signal(wakeSignal);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

export async function wakeReleaseWorkflows(client: Client, releaseIds: readonly string[]): Promise<void> {
  await inParallel(releaseIds, (releaseId) => signalIfRunning(client, workflowIds.release(releaseId)));
}
