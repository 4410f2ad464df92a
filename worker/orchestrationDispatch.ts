import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { releaseStartOptions, signalIfRunning, wakeReleaseWorkflows } from '../activities/releaseWorkflows';
import type { OrchestrationMessage } from '../domain/orchestration';
import { wakeSignal } from '../workflows/definitions';
import { workflowIds } from '../workflows/ids';
import { leaseWorkflow } from '../workflows/lease';
import { releaseWorkflow } from '../workflows/release';
import { targetRolloutWorkflow, versionRolloutWorkflow } from '../workflows/rollout';
import { searchAttributePairs } from '../workflows/searchAttributes';

export type Dispatch = (message: OrchestrationMessage) => Promise<void>;

/** Starts that may be repeated: an existing execution with the id means the work is already done or under way. */
async function startOnce(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** How long one Temporal call may take before the relay gives up on it and retries later. */
const CALL_DEADLINE_MS = 15_000;

/** Turns each outbox message into its Temporal call. */
export function createOrchestrationDispatch(client: Client, taskQueue: string): Dispatch {
  return (message) =>
    client.withDeadline(Date.now() + CALL_DEADLINE_MS, () => dispatch(client, taskQueue, message));
}

async function dispatch(client: Client, taskQueue: string, message: OrchestrationMessage): Promise<void> {
  switch (message.kind) {
    case 'version.ready':
      await startOnce(() =>
        client.workflow.start(versionRolloutWorkflow, {
          workflowId: workflowIds.versionRollout(message.versionId),
          taskQueue,
          args: [{ versionId: message.versionId }],
          // A version becomes ready once; a finished rollout must not run again.
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: searchAttributePairs({
            workspaceId: message.workspaceId,
            deploymentId: message.deploymentId,
            versionId: message.versionId,
          }),
        }),
      );
      return;
    case 'targets.added':
      await startOnce(() =>
        client.workflow.start(targetRolloutWorkflow, {
          workflowId: workflowIds.targetRollout(message.batchId),
          taskQueue,
          args: [{ workspaceId: message.workspaceId, targets: message.targets }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
        }),
      );
      return;
    case 'release.wake':
      await wakeReleaseWorkflows(client, message.releaseIds);
      return;
    case 'lease.start':
      await startOnce(() =>
        client.workflow.start(leaseWorkflow, {
          workflowId: workflowIds.lease(message.jobId, message.claimId),
          taskQueue,
          args: [{ jobId: message.jobId, claimId: message.claimId }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: searchAttributePairs({
            workspaceId: message.workspaceId,
            jobIds: [message.jobId],
          }),
        }),
      );
      return;
    case 'lease.end':
      await signalIfRunning(client, workflowIds.lease(message.jobId, message.claimId));
      return;
    case 'release.redeploy':
      // The release's earlier run may have finished: signal-with-start runs it again, or wakes the running one.
      await client.workflow.signalWithStart(releaseWorkflow, {
        ...releaseStartOptions(taskQueue, message.release),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        signal: wakeSignal,
      });
      return;
  }
}
