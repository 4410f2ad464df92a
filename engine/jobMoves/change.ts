import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../../domain/errors';
import { isTerminalJobStatus, type JobStatus } from '../../domain/jobStatus';
import {
  CLAIM_LIFECYCLE,
  cancelStateOf,
  decideClaimEvent,
  fencedClaim,
  type ClaimEvent,
} from '../../domain/claimLifecycle';
import { JobSchema, type Job } from '../../db/entities';
import { plainRecord } from '../../db/plainRecords';
import { outboxInsert, outboxNotifications } from '../../db/outbox';
import type { OrchestrationMessage } from '../../domain/orchestration';
import { releaseWakeMessages } from '../../db/releaseWake';
import { auditEventsInsert, type AuditOrigin } from '../../db/audit';
import { jobRowEvent, type JobEventRow } from '../../domain/audit';
import {
  numberedPlaceholders,
  preparedStatement,
  runPrepared,
  type PreparedStatement,
} from '../../db/preparedStatements';

/** The events of the claim lifecycle (domain/claimLifecycle.ts) a single job's move is. */
export type JobMoveEvent = Extract<ClaimEvent, 'report' | 'requeue' | 'deliveryCap' | 'cancelDeadline'>;

export interface JobStatusChange {
  /** Which move of the claim lifecycle's table this is (default `report`). */
  event?: JobMoveEvent;
  /** The status a report asks for; the other events' is the table's. */
  status?: JobStatus;
  /** The job's message (default: the table's for the event, if it has one; else unchanged). */
  message?: string | null;
  externalId?: string | null;
  /** The claim the reporter holds (pull agents with leases). */
  claimId?: string;
  /** Statuses narrower than the event's, the job must be in for this change (409 otherwise). */
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

/** The job's row, as the lock read it (column names). */
type JobRow = Record<string, unknown> &
  JobEventRow & {
    status: JobStatus;
    message: string | null;
    external_id: string | null;
    started_at: Date | null;
    completed_at: Date | null;
    cancel_requested_at: Date | null;
    /** Whether its cancel's deadline has passed, by the database's clock. */
    cancel_overdue: boolean | null;
  };

/** The job by id ($1), in the workspace ($2) and of the agent (then $2 or $3) when the scope names them. */
const LOCK_JOB = {
  any: preparedStatement(
    'lock_job',
    'SELECT *, cancel_deadline <= now() AS cancel_overdue FROM job WHERE id = $1 FOR UPDATE',
  ),
  workspace: preparedStatement(
    'lock_job_of_workspace',
    'SELECT *, cancel_deadline <= now() AS cancel_overdue FROM job WHERE id = $1 AND workspace_id = $2 FOR UPDATE',
  ),
  agent: preparedStatement(
    'lock_job_of_agent',
    'SELECT *, cancel_deadline <= now() AS cancel_overdue FROM job WHERE id = $1 AND job_agent_id = $2 FOR UPDATE',
  ),
  workspaceAgent: preparedStatement(
    'lock_job_of_workspace_agent',
    'SELECT *, cancel_deadline <= now() AS cancel_overdue FROM job WHERE id = $1 AND workspace_id = $2 AND job_agent_id = $3 FOR UPDATE',
  ),
};

function lockJobStatement(scope: JobScope): PreparedStatement {
  if (scope.workspaceId) return scope.jobAgentId ? LOCK_JOB.workspaceAgent : LOCK_JOB.workspace;
  return scope.jobAgentId ? LOCK_JOB.agent : LOCK_JOB.any;
}

/** The claim record of the job $1, whether its agent enforces claim ids, and whether a verification awaits its start. */
const CLAIM_FACTS = preparedStatement(
  'job_claim_facts',
  `SELECT c.claim_id, coalesce((a.config->>'enforceClaimId')::boolean, false) AS enforce,
          EXISTS (SELECT 1 FROM job_verification v
                   WHERE v.job_id = j.id AND v.trigger = 'jobStarted' AND v.status = 'pending') AS start_awaited
     FROM (SELECT $1::uuid AS id) j
     LEFT JOIN job_claim c ON c.job_id = j.id
     LEFT JOIN job_agent a ON a.id = c.job_agent_id`,
);

/**
 * Every write of a move, one statement: the job (its status, message, external id and times; only
 * when `writes`), its claim's end, its audit event, its outbox messages and the relay's wake-up.
 */
const MOVE_JOB = preparedStatement(
  'move_job',
  numberedPlaceholders(
    `WITH moved AS (
       UPDATE job SET status = ?, message = ?, external_id = ?, updated_at = now(),
              started_at = CASE WHEN ?::boolean THEN now() WHEN ?::boolean THEN NULL ELSE started_at END,
              completed_at = CASE WHEN ?::boolean THEN now() ELSE completed_at END
        WHERE id = ? AND ?::boolean
       RETURNING *
     ), ended AS (
       DELETE FROM job_claim WHERE job_id = ? AND ?::boolean
     ), audited AS (${auditEventsInsert([]).sql}), queued AS (${outboxInsert([]).sql}),
     notified AS (SELECT ${outboxNotifications([]).sql})
     SELECT moved.* FROM moved RIGHT JOIN notified ON true`,
  ),
);

/**
 * The job, locked for the move, then its claim record and whether a verification waits for the job
 * to start. Two statements on purpose: under READ COMMITTED a statement that waited for the job's
 * lock sees the job as the other transaction left it but every other row as its snapshot had it, so
 * a claim read in the same statement could be one a racing expiry has already deleted. Jobs are
 * locked before claims, the order every status move and the reaper take.
 */
async function lockJobWithClaim(
  tx: EntityManager,
  scope: JobScope,
  jobId: string,
): Promise<{ row: JobRow; claim: ClaimRecord | undefined; startAwaited: boolean } | undefined> {
  const [row] = await runPrepared<JobRow>(tx, lockJobStatement(scope), [
    jobId,
    ...(scope.workspaceId ? [scope.workspaceId] : []),
    ...(scope.jobAgentId ? [scope.jobAgentId] : []),
  ]);
  if (!row) return undefined;
  const [facts] = await runPrepared<{
    claim_id: string | null;
    enforce: boolean | null;
    start_awaited: boolean;
  }>(tx, CLAIM_FACTS, [row.id]);
  return {
    row,
    claim: facts?.claim_id ? { claimId: facts.claim_id, enforce: facts.enforce === true } : undefined,
    startAwaited: facts?.start_awaited === true,
  };
}

/**
 * The one path by which a job's status changes after dispatch: an agent's report, the test
 * runner, a requeue, a cancel. The move must be allowed (409 otherwise); `startedAt` is set the
 * first time the job runs and `completedAt` once, on the first terminal status; a terminal status or
 * a requeue ends the job's claim and its lease workflow; and the release's workflow is woken to
 * evaluate again when the move matters to it (docs/behaviour.md "Status report":
 * it wakes the release), or a runbook run's when the job ends. Reporting the status a job already has changes nothing else.
 * After the two reads of the lock, every write of the move (the job, its claim's end, its audit
 * event, its outbox messages) is one statement: an agent's report costs four round trips.
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
    const { row, claim, startAwaited } = locked;
    const event = change.event ?? 'report';
    // The fence and the move's guards (docs/agents.md "Writing your own agent"): the claim
    // lifecycle's table decides; a stale claim id is refused whatever the write says, naming the
    // job's status, so an agent whose final report was taken though its answer was lost can tell.
    const decision = decideClaimEvent(
      event,
      {
        status: row.status,
        claim: fencedClaim(claim, change.claimId),
        cancel: cancelStateOf(row.cancel_requested_at !== null, row.cancel_overdue === true),
        claimId: change.claimId,
      },
      { reported: change.status, from: change.from },
    );
    if (!decision.allowed) throw new ConflictError(decision.refusal.reason, decision.refusal.code);
    const status = decision.to;
    const message = change.message === undefined ? CLAIM_LIFECYCLE[event].message : change.message;
    const moved = row.status !== status;
    const after = {
      status,
      message: message === undefined ? row.message : message,
      externalId: change.externalId === undefined ? row.external_id : change.externalId,
    };
    const before = { status: row.status, message: row.message, externalId: row.external_id };
    const changed = (['status', 'message', 'externalId'] as const).filter(
      (field) => before[field] !== after[field],
    );
    const starts = status === 'in_progress' && !row.started_at;
    const unstarts = status === 'queued' && moved;
    const completes = isTerminalJobStatus(status) && !row.completed_at;
    const endsClaim = claim !== undefined && decision.claimAfter === 'ended';
    const messages: OrchestrationMessage[] = [];
    if (endsClaim) messages.push({ kind: 'lease.end', jobId, claimId: claim.claimId });
    if (moved && change.wakeRelease !== false) {
      // A release acts on its job's end, or on its start when a verification waits for it (trigger
      // `jobStarted`): queued and in progress both mean "not ended" to it, so an agent reporting
      // in_progress before its result wakes it once, not twice.
      if (row.release_id && (isTerminalJobStatus(status) || (status === 'in_progress' && startAwaited)))
        messages.push(...releaseWakeMessages([row.release_id]));
      if (row.workflow_run_id && isTerminalJobStatus(status))
        messages.push({ kind: 'workflowRun.wake', runId: row.workflow_run_id });
    }
    const writes = changed.length > 0 || starts || unstarts || completes;
    if (!writes && !endsClaim && messages.length === 0) return plainRecord(tx, JobSchema, row);
    const events = changed.length > 0 ? [jobRowEvent(row, after, before.status, [...changed])] : [];
    const audit = auditEventsInsert(events, change.by);
    const outbox = outboxInsert(messages);
    const notify = outboxNotifications(messages);
    const [written] = await runPrepared<JobRow>(tx, MOVE_JOB, [
      status,
      after.message,
      after.externalId,
      starts,
      unstarts,
      completes,
      jobId,
      writes,
      jobId,
      endsClaim,
      ...audit.params,
      ...outbox.params,
      ...notify.params,
    ]);
    return plainRecord(tx, JobSchema, written?.id ? written : row);
  });
}
