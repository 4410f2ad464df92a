import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { OrchestrationMessage, ReleaseAdmission, ReleaseIdentity } from '../domain/orchestration';
import { wakeSignal } from '../workflows/definitions';
import { workflowIds } from '../workflows/ids';
import { leaseTaskQueue, rolloutTaskQueue, webhookTaskQueue } from './taskQueues';
import { approvalScopeWorkflow } from '../workflows/approvalScope';
import { holdWorkflow } from '../workflows/hold';
import { rolloutWavesWorkflow } from '../workflows/rolloutWaves';
import { webhookDeliveryWorkflow } from '../workflows/webhookDelivery';
import { leaseWorkflow } from '../workflows/lease';
import { releaseWorkflow } from '../workflows/release';
import { targetRolloutWorkflow, versionRolloutWorkflow } from '../workflows/rollout';
import { workflowRunWorkflow } from '../workflows/runbookRun';
import { searchAttributePairs } from '../workflows/searchAttributes';

/**
 * The Temporal calls of outbox messages (worker/outboxRelay.ts). Each is safe to repeat: starts
 * are deduplicated by workflow id, and a wake for a workflow that does not run (not started yet, or
 * finished) is dropped: it reads the database when it runs.
 */

export type Dispatch = (message: OrchestrationMessage) => Promise<void>;

/** Starts that may be repeated: an existing execution with the id means the work is already done or under way. */
async function startOnce(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** Wakes a workflow if it runs; one that has not started or has finished reads the database when it runs. */
async function signalIfRunning(client: Client, workflowId: string): Promise<void> {
  try {
    await client.workflow.getHandle(workflowId).signal(wakeSignal);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

/** Wakes of many releases at once, a few in flight at a time. */
const WAKE_CONCURRENCY = 32;

async function wakeReleases(client: Client, releaseIds: readonly string[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(WAKE_CONCURRENCY, releaseIds.length) }, async () => {
      while (next < releaseIds.length)
        await signalIfRunning(client, workflowIds.release(releaseIds[next++]!));
    }),
  );
}

/**
 * Task priorities (lower first) and fairness (cli/embedded/temporalServer.ts TASK_MATCHING_CONFIG):
 * rollouts and leases, which a person or an agent waits on and which are few, before releases;
 * releases in fair shares by deployment, so a deployment's large fan-out leaves every other
 * deployment's releases (their starts, an approval's wake) their turn. Activities inherit them.
 */
const CONTROL_PRIORITY = { priorityKey: 1 };
const releasePriority = (release: { deploymentId: string }) => ({
  priorityKey: 3,
  fairnessKey: release.deploymentId,
});

function releaseStartOptions(taskQueue: string, release: ReleaseIdentity, admitted?: ReleaseAdmission) {
  return {
    workflowId: workflowIds.release(release.id),
    taskQueue,
    priority: releasePriority(release),
    args: [admitted ? { releaseId: release.id, admitted } : { releaseId: release.id }] as [
      Parameters<typeof releaseWorkflow>[0],
    ],
    typedSearchAttributes: searchAttributePairs({
      workspaceId: release.workspaceId,
      deploymentId: release.deploymentId,
      environmentId: release.environmentId,
      resourceId: release.resourceId,
      versionId: release.versionId,
      releaseId: release.id,
      ...(admitted ? { jobIds: admitted.jobs.map((job) => job.id) } : {}),
    }),
  };
}

/** How long one Temporal call may take before the relay gives up on it and retries later. */
const CALL_DEADLINE_MS = 15_000;

/**
 * Turns each outbox message into its Temporal call. The client shares the worker's connection, so
 * a start asks for the workflow's first task to be handed straight to this worker (eager start),
 * sparing the server a round through its task queue when the worker has a free slot.
 */
export function createOrchestrationDispatch(client: Client, taskQueue: string): Dispatch {
  return (message) =>
    client.withDeadline(Date.now() + CALL_DEADLINE_MS, () => dispatch(client, taskQueue, message));
}

type MessageOf<K extends OrchestrationMessage['kind']> = Extract<OrchestrationMessage, { kind: K }>;

async function dispatch(client: Client, taskQueue: string, message: OrchestrationMessage): Promise<void> {
  switch (message.kind) {
    case 'version.ready':
      return startVersionRollout(client, taskQueue, message);
    case 'targets.added':
      return wakeTargetRollout(client, taskQueue, message);
    case 'release.start':
      return startRelease(client, taskQueue, message);
    case 'release.wake':
      return wakeReleases(client, message.releaseIds);
    case 'lease.start':
      return startLease(client, taskQueue, message);
    case 'lease.end':
    case 'lease.wake':
      return signalIfRunning(client, workflowIds.lease(message.jobId, message.claimId));
    case 'release.redeploy':
      return redeployRelease(client, taskQueue, message);
    case 'workflowRun.start':
      return startRunbookRun(client, taskQueue, message);
    case 'workflowRun.wake':
      return signalIfRunning(client, workflowIds.runbookRun(message.runId));
    case 'hold.watch':
      return watchHold(client, taskQueue, message);
    case 'hold.end':
      return signalIfRunning(client, workflowIds.hold(message.holdId));
    case 'rollout.wake':
      return wakeRolloutWaves(client, taskQueue, message);
    case 'approval.scope':
      return recordApprovalScope(client, taskQueue, message);
    case 'webhook.deliver':
      return startWebhookDelivery(client, taskQueue, message);
  }
}

function startVersionRollout(client: Client, taskQueue: string, message: MessageOf<'version.ready'>) {
  return startOnce(() =>
    client.workflow.start(versionRolloutWorkflow, {
      workflowId: workflowIds.versionRollout(message.versionId),
      taskQueue: rolloutTaskQueue(taskQueue),
      priority: CONTROL_PRIORITY,
      args: [{ versionId: message.versionId }],
      // A version becomes ready once; a finished rollout must not run again.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      requestEagerStart: true,
      typedSearchAttributes: searchAttributePairs({
        workspaceId: message.workspaceId,
        deploymentId: message.deploymentId,
        versionId: message.versionId,
      }),
    }),
  );
}

/** One rollout per workspace drains every flagged target: wake it, or start it again if it ended. */
async function wakeTargetRollout(client: Client, taskQueue: string, message: MessageOf<'targets.added'>) {
  await client.workflow.signalWithStart(targetRolloutWorkflow, {
    workflowId: workflowIds.targetRollout(message.workspaceId),
    taskQueue: rolloutTaskQueue(taskQueue),
    priority: CONTROL_PRIORITY,
    args: [{ workspaceId: message.workspaceId }],
    signal: wakeSignal,
    typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
  });
}

function startRelease(client: Client, taskQueue: string, message: MessageOf<'release.start'>) {
  return startOnce(() =>
    client.workflow.start(releaseWorkflow, {
      ...releaseStartOptions(taskQueue, message.release, message.admitted),
      // A finished release does not run again by accident; a redeploy restarts it on purpose.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      requestEagerStart: true,
    }),
  );
}

function startLease(client: Client, taskQueue: string, message: MessageOf<'lease.start'>) {
  return startOnce(() =>
    client.workflow.start(leaseWorkflow, {
      workflowId: workflowIds.lease(message.jobId, message.claimId),
      taskQueue: leaseTaskQueue(taskQueue),
      priority: CONTROL_PRIORITY,
      args: [
        {
          jobId: message.jobId,
          claimId: message.claimId,
          ...(message.expiresAt ? { expiresAt: message.expiresAt } : {}),
        },
      ],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      requestEagerStart: true,
      typedSearchAttributes: searchAttributePairs({
        workspaceId: message.workspaceId,
        jobIds: [message.jobId],
      }),
    }),
  );
}

/** A hold's clock, with the control work on the rollout queue: a freeze must not wait behind releases. */
function watchHold(client: Client, taskQueue: string, message: MessageOf<'hold.watch'>) {
  return startOnce(() =>
    client.workflow.start(holdWorkflow, {
      workflowId: workflowIds.hold(message.holdId),
      taskQueue: rolloutTaskQueue(taskQueue),
      priority: CONTROL_PRIORITY,
      args: [
        { workspaceId: message.workspaceId, holdId: message.holdId, nextChangeAt: message.nextChangeAt },
      ],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
    }),
  );
}

/** A rollout in waves: wake its workflow, or start it (the first member joined, or it ended and runs again). */
async function wakeRolloutWaves(client: Client, taskQueue: string, message: MessageOf<'rollout.wake'>) {
  await client.workflow.signalWithStart(rolloutWavesWorkflow, {
    workflowId: workflowIds.rolloutWaves(message.rolloutId),
    taskQueue: rolloutTaskQueue(taskQueue),
    priority: CONTROL_PRIORITY,
    args: [{ workspaceId: message.workspaceId, rolloutId: message.rolloutId }],
    signal: wakeSignal,
    typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
  });
}

/** An approval's scope, on the control queue: a person waits on it, and it is one per decision. */
function recordApprovalScope(client: Client, taskQueue: string, message: MessageOf<'approval.scope'>) {
  return startOnce(() =>
    client.workflow.start(approvalScopeWorkflow, {
      workflowId: workflowIds.approvalScope(message.approvalId, message.decision),
      taskQueue: rolloutTaskQueue(taskQueue),
      priority: CONTROL_PRIORITY,
      args: [{ approvalId: message.approvalId, decision: message.decision }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
    }),
  );
}

/**
 * A webhook delivery runs on the webhooks' queue, in fair shares by workspace: a receiver's pace never
 * holds a release or a rollout, and one workspace's backlog of slow receivers never holds another
 * workspace's deliveries behind it. Its attempts inherit the fairness key.
 */
function startWebhookDelivery(client: Client, taskQueue: string, message: MessageOf<'webhook.deliver'>) {
  return startOnce(() =>
    client.workflow.start(webhookDeliveryWorkflow, {
      workflowId: workflowIds.webhookDelivery(message.deliveryId),
      taskQueue: webhookTaskQueue(taskQueue),
      priority: { fairnessKey: message.workspaceId },
      args: [{ deliveryId: message.deliveryId }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
    }),
  );
}

/** The release's earlier run may have finished: signal-with-start runs it again, or wakes the running one. */
async function redeployRelease(client: Client, taskQueue: string, message: MessageOf<'release.redeploy'>) {
  await client.workflow.signalWithStart(releaseWorkflow, {
    ...releaseStartOptions(taskQueue, message.release),
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    signal: wakeSignal,
  });
}

/** A runbook run's Temporal workflow (its type, `workflowRunWorkflow`, keeps the name it was recorded under). */
function startRunbookRun(client: Client, taskQueue: string, message: MessageOf<'workflowRun.start'>) {
  return startOnce(() =>
    client.workflow.start(workflowRunWorkflow, {
      workflowId: workflowIds.runbookRun(message.runId),
      taskQueue,
      // A runbook run's jobs, like a deployment's releases, in a fair share of their own (per runbook).
      priority: { priorityKey: 3, fairnessKey: message.workflowId },
      args: [{ runId: message.runId }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      requestEagerStart: true,
      typedSearchAttributes: searchAttributePairs({ workspaceId: message.workspaceId }),
    }),
  );
}

/**
 * Messages that only say "look again" at one thing, so any number of them in one relay batch are
 * served by one call: a burst of resource upserts makes one target rollout call per workspace.
 */
export function coalescingKey(message: OrchestrationMessage): string | undefined {
  return message.kind === 'targets.added' ? `targets.added/${message.workspaceId}` : undefined;
}

/** The lease a `lease.start` or `lease.end` message is about (undefined for other messages). */
export function leaseKey(message: OrchestrationMessage): string | undefined {
  return message.kind === 'lease.start' || message.kind === 'lease.end'
    ? `${message.jobId}/${message.claimId}`
    : undefined;
}

/**
 * Leases both started and ended among these messages: the claim ended before its lease workflow
 * started, so neither call is needed (started, the workflow could miss the wake sent beside it and
 * sleep out the whole lease for nothing).
 */
export function settledLeases(messages: readonly OrchestrationMessage[]): string[] {
  const started = new Set(messages.filter((m) => m.kind === 'lease.start').map(leaseKey));
  return messages
    .filter((m) => m.kind === 'lease.end')
    .map((m) => leaseKey(m)!)
    .filter((key) => started.has(key));
}
