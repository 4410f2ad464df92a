import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../../domain/errors';
import { canMoveJob, isTerminalJobStatus, type JobStatus } from '../../domain/jobStatus';
import { JobSchema, type Job } from '../../db/entities';
import { enqueueOrchestrations } from '../../db/outbox';
import type { OrchestrationMessage } from '../../domain/orchestration';
import { releaseWakeMessages } from '../../db/releaseWake';
import { recordAuditEvents, type AuditOrigin } from '../../db/audit';
import { jobEvent } from '../../domain/audit';

export interface JobStatusChange {
  status?: JobStatus;
  message?: string | null;
  externalId?: string | null;
  /** The claim the reporter holds (pull agents with leases). */
  claimId?: string;
  /** The statuses the job must be in for this change (409 otherwise). */
  from?: readonly JobStatus[];
  /**
   * Whether the workflow that owns the job (its release's, or its runbook run's) is woken by the
   * move (default true). Steps of that workflow
   * (the test runner's completion, a push agent's follow) pass false: it learns the move from
   * their answer, and a second wake could only reach it while it ends.
   */
  wakeRelease?: boolean;
  /** Who moves the job, for its audit event (the system when absent). */
  by?: AuditOrigin;
}

export interface JobScope {
  workspaceId?: string;
  /** For a key scoped to one job agent: another agent's job is not found. */
  jobAgentId?: string | null;
}

/** A job's claim record, and whether its agent requires the claim id on every write. */
interface ClaimRecord {
  claimId: string;
  enforce: boolean;
}

/**
 * Checks a claim id against the job's claim record: a write that carries a claim id must carry the
 * current one, and under the agent's `enforceClaimId` every write must carry it (409 otherwise). A
 * claim id given for a job whose claim has ended (requeued, expired, cancelled, or ended by the
 * final report) is stale too, whatever the write says; the answer names the job's status, so an
 * agent whose final report was taken though its answer was lost can tell.
 */
function fenceClaim(
  job: { status: JobStatus },
  claim: ClaimRecord | undefined,
  claimId: string | undefined,
): void {
  const stale = claimId !== undefined ? claimId !== claim?.claimId : claim?.enforce === true;
  if (stale) {
    throw new ConflictError(
      claimId
        ? `claim ${claimId} is not the current claim of the job, which is ${job.status}`
        : 'this agent requires the current claim_id',
      'stale_claim',
    );
  }
}

/**
 * The job, locked for the move, then its claim record. Two statements on purpose: under READ
 * COMMITTED a statement that waited for the job's lock sees the job as the other transaction left
 * it but every other row as its snapshot had it, so a claim read in the same statement could be one
 * a racing expiry has already deleted. Jobs are locked before claims, the order every status move
 * and the reaper take.
 */
async function lockJobWithClaim(
  tx: EntityManager,
  scope: JobScope,
  jobId: string,
): Promise<{ job: Job; claim: ClaimRecord | undefined } | undefined> {
  const job = await tx.findOne(
    JobSchema,
    {
      id: jobId,
      ...(scope.workspaceId ? { workspaceId: scope.workspaceId } : {}),
      ...(scope.jobAgentId ? { jobAgentId: scope.jobAgentId } : {}),
    },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
  if (!job) return undefined;
  const [claim] = await tx.execute<{ claim_id: string; enforce: boolean }[]>(
    `SELECT c.claim_id, coalesce((a.config->>'enforceClaimId')::boolean, false) AS enforce
       FROM job_claim c JOIN job_agent a ON a.id = c.job_agent_id WHERE c.job_id = ?`,
    [job.id],
  );
  return { job, claim: claim ? { claimId: claim.claim_id, enforce: claim.enforce } : undefined };
}

/**
 * The one path by which a job's status changes after dispatch: an agent's report, the test
 * runner, a requeue, a cancel. The move must be allowed (409 otherwise); `startedAt` is set the
 * first time the job runs and `completedAt` once, on the first terminal status; a terminal status or
 * a requeue ends the job's claim and its lease workflow; and the release's workflow is woken to
 * evaluate again when the move matters to it (docs/behaviour.md "Status report":
 * it wakes the release), or a runbook run's when the job ends. Reporting the status a job already has changes nothing else.
 * Its outbox messages (the lease's end, the wakes) are one statement.
 */
export async function changeJobStatus(
  em: EntityManager,
  scope: JobScope,
  jobId: string,
  change: JobStatusChange,
): Promise<Job> {
  return em.transactional(async (tx) => {
    const locked = await lockJobWithClaim(tx, scope, jobId);
    if (!locked) throw new NotFoundError('job', jobId);
    const { job, claim } = locked;
    fenceClaim(job, claim, change.claimId);
    const status = change.status ?? job.status;
    if (change.from && !change.from.includes(job.status)) {
      throw new ConflictError(
        `The job is ${job.status}, not ${change.from.join(' or ')}`,
        'invalid_status_move',
      );
    }
    if (!canMoveJob(job.status, status)) {
      throw new ConflictError(`A job cannot move from ${job.status} to ${status}`, 'invalid_status_move');
    }
    const moved = job.status !== status;
    const before = { status: job.status, message: job.message, externalId: job.externalId };
    job.status = status;
    if (change.message !== undefined) job.message = change.message;
    if (change.externalId !== undefined) job.externalId = change.externalId;
    const changed = (['status', 'message', 'externalId'] as const).filter(
      (field) => before[field] !== job[field],
    );
    if (changed.length > 0)
      await recordAuditEvents(tx, [jobEvent(job, before.status, [...changed])], change.by);
    if (status === 'in_progress' && !job.startedAt) job.startedAt = new Date();
    if (status === 'queued' && moved) job.startedAt = null;
    if (isTerminalJobStatus(status) && !job.completedAt) job.completedAt = new Date();
    const messages: OrchestrationMessage[] = [];
    if (claim && (isTerminalJobStatus(status) || status === 'queued')) {
      await tx.execute('DELETE FROM job_claim WHERE job_id = ?', [jobId]);
      messages.push({ kind: 'lease.end', jobId, claimId: claim.claimId });
    }
    if (moved && change.wakeRelease !== false) {
      if (job.releaseId && (await releaseWaitsFor(tx, jobId, status)))
        messages.push(...releaseWakeMessages([job.releaseId]));
      if (job.runbookRunId && isTerminalJobStatus(status))
        messages.push({ kind: 'workflowRun.wake', runId: job.runbookRunId });
    }
    await enqueueOrchestrations(tx, messages);
    return job;
  });
}

/**
 * Whether a job's new status is something its release acts on: its end, or its start when a
 * verification waits for it (trigger `jobStarted`). Queued and in progress both mean "not ended" to
 * a release, so an agent reporting `in_progress` before its result wakes it once, not twice.
 */
async function releaseWaitsFor(tx: EntityManager, jobId: string, status: JobStatus): Promise<boolean> {
  if (isTerminalJobStatus(status)) return true;
  if (status === 'pending' || status === 'queued') return false;
  const [waiting] = await tx.execute<{ waiting: boolean }[]>(
    `SELECT EXISTS (SELECT 1 FROM job_verification WHERE job_id = ? AND trigger = 'jobStarted' AND status = 'pending') AS waiting`,
    [jobId],
  );
  return waiting?.waiting === true;
}
