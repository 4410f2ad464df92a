import type { GateEvaluation } from './gates';
import type { JobAgentType } from './jobAgentTypes';
import type { JobStatus } from './jobStatus';
import type { ReleaseTargetRef } from './releaseTargets';

/** A release and the records it belongs to: what a release workflow is started with and found by. */
export interface ReleaseIdentity extends ReleaseTargetRef {
  id: string;
  workspaceId: string;
  versionId: string;
}

/** A release's identity as its row spells it. */
export interface ReleaseIdentityRow {
  id: string;
  workspace_id: string;
  deployment_id: string;
  environment_id: string;
  resource_id: string;
  version_id: string;
}

export function releaseOfRow(row: ReleaseIdentityRow): ReleaseIdentity {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    deploymentId: row.deployment_id,
    environmentId: row.environment_id,
    resourceId: row.resource_id,
    versionId: row.version_id,
  };
}

/** A job as the release workflow tracks it. */
export interface JobRef {
  id: string;
  status: JobStatus;
  agentType: JobAgentType | null;
}

/**
 * A release whose gates passed when it was created: the fan-out wrote its first jobs in the same
 * transaction. Its workflow starts with this, so its history shows from the first event the
 * verdict and the jobs it runs.
 */
export interface ReleaseAdmission {
  evaluation: GateEvaluation;
  attempt: number;
  jobs: JobRef[];
}

/**
 * What the API asks of the orchestration layer. Each message is written to the outbox in the same
 * transaction as the records it concerns, and turned into a Temporal call by the relay in the
 * worker (worker/orchestrationDispatch.ts). Handlers must be idempotent: a message can be
 * delivered more than once, and messages for one workflow can arrive in any order. Workflows treat
 * them as "look again": the database holds the facts.
 */
export type OrchestrationMessage =
  /** A version became ready: give it one release per release target (the rollout workflow). */
  | { kind: 'version.ready'; workspaceId: string; deploymentId: string; versionId: string }
  /**
   * New release targets, flagged `rollout_pending` in the same transaction: the workspace's target
   * rollout gives each a release of the newest eligible version. Many of these coalesce into one run.
   */
  | { kind: 'targets.added'; workspaceId: string }
  /** A release was created: its workflow must run (written in the transaction that created it). */
  | { kind: 'release.start'; release: ReleaseIdentity; admitted?: ReleaseAdmission }
  /** Something a release's gates or jobs depend on changed: its workflow evaluates again. */
  | { kind: 'release.wake'; releaseIds: string[] }
  /** Start a release's workflow again (a redeploy after it finished), or wake it if it runs. */
  | { kind: 'release.redeploy'; release: ReleaseIdentity }
  /** A claim with a lease was committed: its lease workflow must run (written by the claim statement itself). */
  | {
      kind: 'lease.start';
      workspaceId: string;
      jobAgentId: string;
      jobId: string;
      claimId: string;
      /** The claim's deadline when granted (absent in messages written before it was passed). */
      expiresAt?: string;
    }
  /** A claim ended (terminal status, requeue): its lease workflow stops. */
  | { kind: 'lease.end'; jobId: string; claimId: string }
  /** A claim's deadline moved earlier (a cancel asked): its lease workflow reads it again. */
  | { kind: 'lease.wake'; jobId: string; claimId: string }
  /**
   * A runbook run was created with its jobs: start its Temporal workflow, which dispatches them.
   * Stored outbox rows hold this kind and these fields under the runbook's API name: `workflowId`
   * is the runbook's id.
   */
  | { kind: 'workflowRun.start'; workspaceId: string; workflowId: string; runId: string }
  /** One of a runbook run's jobs ended: its Temporal workflow looks again (kind as stored). */
  | { kind: 'workflowRun.wake'; runId: string }
  /** A hold that changes by itself (a freeze's windows, an expiry) was created: its workflow keeps its clock. */
  | { kind: 'hold.watch'; workspaceId: string; holdId: string; nextChangeAt: string }
  /** A hold was deleted: its workflow, if it runs, looks once more and ends. */
  | { kind: 'hold.end'; holdId: string }
  /**
   * A rollout in waves gained members, or one of them ended, or an operator paused, resumed or
   * aborted it: its workflow (started by the first) advances it. Many coalesce into one step.
   */
  | { kind: 'rollout.wake'; workspaceId: string; rolloutId: string }
  /** A key approved a version in an environment: its workflow records what the approval covers. */
  | { kind: 'approval.scope'; workspaceId: string; approvalId: string; decision: number }
  /**
   * An event to send to a webhook (docs/behaviour.md "Webhooks"): its delivery workflow sends it until
   * it is taken. Written by the audit trail's trigger (Migration0033) and by a redelivery.
   */
  | { kind: 'webhook.deliver'; workspaceId: string; deliveryId: string };

export type OrchestrationKind = OrchestrationMessage['kind'];

/** Messages that name many records are split so each stays small. */
export const MAX_IDS_PER_MESSAGE = 500;

export function chunk<T>(items: readonly T[], size = MAX_IDS_PER_MESSAGE): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}
