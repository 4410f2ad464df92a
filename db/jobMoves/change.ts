import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../../domain/errors';
import { canMoveJob, isTerminalJobStatus, type JobStatus } from '../../domain/jobStatus';
import { JobSchema, type Job } from '../entities';
import { enqueueOrchestration } from '../outbox';
import { wakeReleases } from '../releaseWake';

export interface JobStatusChange {
  status?: JobStatus;
  message?: string | null;
  externalId?: string | null;
  /** The claim the reporter holds (pull agents with leases). */
  claimId?: string;
  /** The statuses the job must be in for this change (409 otherwise). */
  from?: readonly JobStatus[];
  /**
   * Whether the workflow that owns the job (its release's, or its workflow run's) is woken by the
   * move (default true). Steps of that workflow
   * (the test runner's completion, a push agent's follow) pass false: it learns the move from
   * their answer, and a second wake could only reach it while it ends.
   */
  wakeRelease?: boolean;
}

export interface JobScope {
  workspaceId?: string;
  /** For a key scoped to one job agent: another agent's job is not found. */
  jobAgentId?: string | null;
}

/**
 * Checks a claim id against the job's claim record: a write that carries a claim id must carry the
 * current one, and under the agent's `enforceClaimId` every write must carry it (409 otherwise). A
 * claim id given for a job whose claim has ended (requeued, expired, cancelled, or ended by the
 * final report) is stale too, whatever the write says; the answer names the job's status, so an
 * agent whose final report was taken though its answer was lost can tell. Returns the claim
 * record, if there is one.
 */
export async function fenceClaim(
  em: EntityManager,
  job: { id: string; status: JobStatus },
  claimId: string | undefined,
): Promise<{ claim_id: string } | undefined> {
  const [claim] = await em.execute<{ claim_id: string; enforce: boolean }[]>(
    `SELECT c.claim_id, coalesce((a.config->>'enforceClaimId')::boolean, false) AS enforce
       FROM job_claim c JOIN job_agent a ON a.id = c.job_agent_id WHERE c.job_id = ?`,
    [job.id],
  );
  const stale = claimId !== undefined ? claimId !== claim?.claim_id : claim?.enforce === true;
  if (stale) {
    throw new ConflictError(
      claimId
        ? `claim ${claimId} is not the current claim of the job, which is ${job.status}`
        : 'this agent requires the current claim_id',
      'stale_claim',
    );
  }
  return claim;
}

/**
 * The one path by which a job's status changes after dispatch: an agent's report, the test
 * runner, a requeue, a cancel. The move must be allowed (409 otherwise); `startedAt` is set the
 * first time the job runs and `completedAt` once, on the first terminal status; a terminal status or
 * a requeue ends the job's claim and its lease workflow; and the release's workflow is woken to
 * evaluate again when the move matters to it (SPEC: "the status report enqueues a desired-release
 * evaluation"), or a workflow run's when the job ends. Reporting the status a job already has changes nothing else.
 */
export async function changeJobStatus(
  em: EntityManager,
  scope: JobScope,
  jobId: string,
  change: JobStatusChange,
): Promise<Job> {
  return em.transactional(async (tx) => {
    const where = {
      id: jobId,
      ...(scope.workspaceId ? { workspaceId: scope.workspaceId } : {}),
      ...(scope.jobAgentId ? { jobAgentId: scope.jobAgentId } : {}),
    };
    const job = await tx.findOne(JobSchema, where, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!job) throw new NotFoundError('job', jobId);
    const claim = await fenceClaim(tx, job, change.claimId);
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
    job.status = status;
    if (change.message !== undefined) job.message = change.message;
    if (change.externalId !== undefined) job.externalId = change.externalId;
    if (status === 'in_progress' && !job.startedAt) job.startedAt = new Date();
    if (status === 'queued' && moved) job.startedAt = null;
    if (isTerminalJobStatus(status) && !job.completedAt) job.completedAt = new Date();
    if (claim && (isTerminalJobStatus(status) || status === 'queued')) {
      await tx.execute('DELETE FROM job_claim WHERE job_id = ?', [jobId]);
      await enqueueOrchestration(tx, { kind: 'lease.end', jobId, claimId: claim.claim_id });
    }
    if (moved && change.wakeRelease !== false) {
      if (job.releaseId && (await releaseWaitsFor(tx, jobId, status)))
        await wakeReleases(tx, [job.releaseId]);
      if (job.workflowRunId && isTerminalJobStatus(status))
        await enqueueOrchestration(tx, { kind: 'workflowRun.wake', runId: job.workflowRunId });
    }
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
