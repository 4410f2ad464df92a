import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobStatus } from '../../domain/jobStatus';
import {
  CLAIM_LIFECYCLE,
  decideClaimEvent,
  deliveryCapMessage,
  deliveryCapReached,
  guardRefusal,
  statusInto,
  type CancelState,
  type ClaimFacts,
  type ClaimRefusal,
} from '../../domain/claimLifecycle';
import { JobSchema, type Job } from '../../db/entities';
import { OUTBOX_CHANNEL, outboxInsertFrom, outboxTraceContext } from '../../db/outbox';
import { plainRecord } from '../../db/plainRecords';
import { jobStatusListSql } from '../../db/sql';
import { deliveryLimits, leaseExpiries, leaseReaperLag } from '../metrics';
import { DEFAULT_MAX_DELIVERIES, LEASE_SHORTHAND_SECONDS } from '../../domain/jobAgents';
import { changeJobStatus } from './change';
import type { AgentCaller } from './pull';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';
import { SYSTEM_ORIGIN, auditEventsInsertFrom, type AuditOrigin } from '../../db/audit';

/**
 * The claim lifecycle's statements (docs/agents.md "Writing your own agent": claims, leases,
 * heartbeats, delivery cap, graceful cancel), each taking its status lists, values and refusals from
 * the transition table of domain/claimLifecycle.ts (`CLAIM_LIFECYCLE`). A claim is ONE statement: it
 * moves a queued job of the agent to in_progress and — for an agent with a lease — inserts the claim
 * record and the outbox row that starts the claim's lease workflow (which trails the claim: the
 * answer never waits on Temporal), writes its audit events, notifies the relay, and returns the
 * claimed job. Either all of it commits or none of it does: a committed claim record always has its
 * lease workflow coming (the relay starts it even if this process dies right after the commit), and
 * a failed claim leaves nothing behind. Concurrent claims of one job serialize on the row; exactly
 * one sees it queued.
 */

const CLAIM_MOVE = CLAIM_LIFECYCLE.claim;
const EXPIRY_MOVE = CLAIM_LIFECYCLE.leaseExpiry;

/** The one status a transition applies in, as SQL: what its audit event names as the status moved from. */
function fromStatusSql(from: readonly JobStatus[]): string {
  if (from.length !== 1)
    throw new Error(`an audit event names one status moved from, not ${from.join(', ')}`);
  return jobStatusListSql(from);
}

/**
 * A transition's cancel guard as SQL on a job row (`alias`): the set-based statements of the claim
 * lifecycle apply only to jobs whose cancel was not asked, and fail at load if the table ever says
 * otherwise.
 */
export function cancelGuardSql(states: readonly CancelState[], alias: string): string {
  if (states.length !== 1 || states[0] !== 'none')
    throw new Error(`no SQL for the cancel guard ${states.join(', ')}`);
  return `${alias}.cancel_requested_at IS NULL`;
}

export interface LeaseGrant {
  claimId: string;
  leaseSeconds: number;
  expiresAt: string;
}

export interface LeaseState {
  jobId: string;
  claimId: string;
  leaseSeconds: number;
  expiresAt: string;
  /** Set once the job's cancel was asked: stop it and report `cancelled` before then. */
  cancelDeadline?: string;
}

/** The claiming agent as the claim read it. */
export interface ClaimingAgent {
  name: string;
  type: string;
}

export type ClaimOutcome =
  | { outcome: 'claimed'; agent: ClaimingAgent; job: Job; lease: LeaseGrant | null }
  | { outcome: 'no_agent' }
  | { outcome: 'not_pull_agent'; agent: ClaimingAgent }
  /** Not queued (another claim got it first), or held (docs/behaviour.md "Holds and freezes"). */
  | { outcome: 'refused'; refusal: ClaimRefusal }
  | { outcome: 'not_found' };

export interface ClaimRequest {
  workspaceId: string;
  jobAgentId: string;
  jobId: string;
  claimId: string;
  /** Who claims: its audit events are theirs. */
  by: AuditOrigin;
}

/** The audit events of a claim, one per row of `claimed` (the job handed out, its move). */
const CLAIM_EVENTS = `SELECT c.workspace_id, a.action, 'job', c.id::text, a.changes,
            jsonb_strip_nulls(jsonb_build_object('jobId', c.id, 'releaseId', c.release_id,
                                                 'workflowRunId', c.workflow_run_id,
                                                 'from', ${fromStatusSql(CLAIM_MOVE.from)},
                                                 'to', ${jobStatusListSql([statusInto('claim')])},
                                                 'claimId', $4::text)),
            c.deployment_id
       FROM claimed c
      CROSS JOIN (VALUES ('job.claimed', '[]'::jsonb), ('job.status_changed', '["status"]'::jsonb)) AS a(action, changes)`;

/** The outbox message that starts a granted lease's workflow, one per row of `lease`. */
const LEASE_START = `SELECT jsonb_build_object('kind', 'lease.start', 'workspaceId', $3::text, 'jobAgentId', $2::text,
                            'jobId', job_id, 'claimId', claim_id,
                            'expiresAt', to_char(claim_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
       FROM lease`;

/**
 * The claim (`claimJob`): $1 job, $2 agent, $3 workspace, $4 claim id, $5 trace context, $6–$9 the
 * audit actor's type, id and name and the request id. It reads the agent too (its type, name and
 * lease: `leaseSeconds`, or `LEASE_SHORTHAND_SECONDS` for `lease: true`), and claims only an
 * `http-pull` agent's job in the claim's `from` statuses, neither held nor asked to cancel (its
 * guards in the table); its audit events and its lease's outbox row are written by the same
 * statement (db/audit.ts, db/outbox.ts). No row: no such agent in the workspace.
 */
const CLAIM = preparedStatement(
  'claim_job',
  `WITH agent AS (
     SELECT name, type,
            CASE WHEN jsonb_typeof(config->'leaseSeconds') = 'number' THEN (config->>'leaseSeconds')::int
                 WHEN config->'lease' = 'true'::jsonb THEN ${LEASE_SHORTHAND_SECONDS} END AS lease_seconds
       FROM job_agent WHERE id = $2 AND workspace_id = $3
   ), claimed AS (
     UPDATE job SET status = ${jobStatusListSql([statusInto('claim')])}, started_at = coalesce(started_at, now()), updated_at = now()
      WHERE id = $1 AND job_agent_id = $2 AND workspace_id = $3 AND status IN (${jobStatusListSql(CLAIM_MOVE.from)})
        AND EXISTS (SELECT 1 FROM agent WHERE type = 'http-pull')
        AND NOT EXISTS (SELECT 1 FROM job_hold h WHERE h.job_id = $1) AND ${cancelGuardSql(CLAIM_MOVE.cancel, 'job')}
      RETURNING *
   ), lease AS (
     INSERT INTO job_claim (job_id, job_agent_id, workspace_id, claim_id, lease_seconds, claim_expires_at)
     SELECT c.id, c.job_agent_id, c.workspace_id, $4::uuid, a.lease_seconds, now() + make_interval(secs => a.lease_seconds)
       FROM claimed c CROSS JOIN agent a WHERE a.lease_seconds IS NOT NULL
     RETURNING job_id, claim_id, lease_seconds, claim_expires_at
   ), started AS (
     ${outboxInsertFrom(LEASE_START, '$5')}
     RETURNING id
   ), audited AS (
     ${auditEventsInsertFrom(CLAIM_EVENTS, ['$6', '$7', '$8', '$9'])}
   )
   -- The agent's columns are named apart from the job's (which has an agent_type of its own).
   SELECT a.name AS claiming_agent_name, a.type AS claiming_agent_type, c.*, l.claim_id AS lease_claim_id,
          l.lease_seconds AS lease_length, l.claim_expires_at AS lease_expires_at,
          (SELECT count(*) FROM started) AS outbox,
          (SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM started LIMIT 1) AS notified
     FROM agent a LEFT JOIN claimed c ON true LEFT JOIN lease l ON l.job_id = c.id`,
);

/**
 * Why a claim found nothing to claim: the job $1 of the workspace $2 and the agent $3, its status,
 * whether its cancel was asked, and the first hold that keeps it back. Conflicts are common: agents
 * race for one page.
 */
const UNCLAIMED_JOB = preparedStatement(
  'unclaimed_job',
  `SELECT j.status, j.cancel_requested_at IS NOT NULL AS cancel_asked,
          (SELECT json_build_object('id', h.id, 'reason', h.reason, 'by', h.created_by_name)
             FROM job_hold jh JOIN hold h ON h.id = jh.hold_id WHERE jh.job_id = j.id
            ORDER BY h.created_at, h.id LIMIT 1) AS hold
     FROM job j WHERE j.id = $1 AND j.workspace_id = $2 AND j.job_agent_id = $3`,
);

/** A claimed job's row as `CLAIM` answers it, with the agent's and the lease's columns. */
type ClaimRow = Record<string, unknown> & {
  claiming_agent_name: string;
  claiming_agent_type: string;
  id: string | null;
  lease_claim_id: string | null;
  lease_length: number | null;
  lease_expires_at: Date | null;
};

export async function claimJob(em: EntityManager, request: ClaimRequest): Promise<ClaimOutcome> {
  const { actor, requestId } = request.by;
  const [row] = await runPrepared<ClaimRow>(em, CLAIM, [
    request.jobId,
    request.jobAgentId,
    request.workspaceId,
    request.claimId,
    outboxTraceContext(),
    actor.type,
    actor.id,
    actor.name,
    requestId,
  ]);
  if (!row) return { outcome: 'no_agent' };
  const agent = { name: row.claiming_agent_name, type: row.claiming_agent_type };
  if (agent.type !== 'http-pull') return { outcome: 'not_pull_agent', agent };
  if (row.id) return { outcome: 'claimed', agent, ...claimedJob(em, row) };
  return whyUnclaimed(em, request);
}

/** The claimed job as the statement returned it (the answer needs no second read), and its lease. */
function claimedJob(em: EntityManager, row: ClaimRow): { job: Job; lease: LeaseGrant | null } {
  const {
    claiming_agent_name: _name,
    claiming_agent_type: _type,
    lease_claim_id: claimId,
    lease_length: leaseSeconds,
    lease_expires_at: expiresAt,
    ...job
  } = row;
  return {
    job: plainRecord(em, JobSchema, job),
    lease: claimId
      ? { claimId, leaseSeconds: leaseSeconds!, expiresAt: new Date(expiresAt!).toISOString() }
      : null,
  };
}

/** The refusal of a claim that claimed nothing, the table deciding on the job as it is now. */
async function whyUnclaimed(em: EntityManager, request: ClaimRequest): Promise<ClaimOutcome> {
  const [job] = await runPrepared<{
    status: JobStatus;
    cancel_asked: boolean;
    hold: ClaimFacts['hold'] | null;
  }>(em, UNCLAIMED_JOB, [request.jobId, request.workspaceId, request.jobAgentId]);
  if (!job) return { outcome: 'not_found' };
  const facts: ClaimFacts = {
    status: job.status,
    claim: 'none',
    cancel: job.cancel_asked ? 'asked' : 'none',
    ...(job.hold ? { hold: job.hold } : {}),
  };
  const decision = decideClaimEvent('claim', facts);
  // Claimable now, though the claim found it not so: it changed between the two statements (a hold
  // lifted, a requeue). The claim lost a race, and says so.
  return {
    outcome: 'refused',
    refusal: decision.allowed ? guardRefusal('claim', 'status', facts) : decision.refusal,
  };
}

/**
 * A heartbeat's fence and extension (`extendLease`), the table's `heartbeat` row: only a `current`
 * claim is extended (domain/claimLifecycle.ts `fencedClaim`, here in SQL: the claim id given, or
 * none while the agent does not enforce claim ids), whatever the job's status; a job whose cancel
 * was asked is extended no further than its cancel deadline, and the answer carries that deadline.
 */
const HEARTBEAT = preparedStatement(
  'pull_heartbeat',
  `UPDATE job_claim c
      SET claim_expires_at = least(now() + make_interval(secs => c.lease_seconds), coalesce(j.cancel_deadline, 'infinity'))
     FROM job_agent a, job j
    WHERE c.job_id = $1 AND c.workspace_id = $2 AND a.id = c.job_agent_id AND j.id = c.job_id
      AND ($3::uuid IS NULL OR c.job_agent_id = $3::uuid)
      AND (c.claim_id = $4::uuid
           OR ($4::uuid IS NULL AND NOT coalesce((a.config->>'enforceClaimId')::boolean, false)))
    RETURNING c.claim_id, c.lease_seconds, c.claim_expires_at, j.cancel_deadline`,
);

/**
 * A heartbeat's extension (`HEARTBEAT`): the lease as extended, or nothing when the fence held (no
 * such job, or its claim is gone or another one's).
 */
export async function extendLease(
  em: EntityManager,
  caller: AgentCaller,
  jobId: string,
  claimId: string | undefined,
): Promise<LeaseState | undefined> {
  const [row] = await runPrepared<{
    claim_id: string;
    lease_seconds: number;
    claim_expires_at: Date;
    cancel_deadline: Date | null;
  }>(em, HEARTBEAT, [jobId, caller.workspaceId, caller.jobAgentId, claimId ?? null]);
  if (!row) return undefined;
  return {
    jobId,
    claimId: row.claim_id,
    leaseSeconds: row.lease_seconds,
    expiresAt: new Date(row.claim_expires_at).toISOString(),
    ...(row.cancel_deadline ? { cancelDeadline: new Date(row.cancel_deadline).toISOString() } : {}),
  };
}

/**
 * A claim record as the lease workflow sees it, if it still exists with this claim id: how long its
 * lease has left, measured by the database's clock (the one heartbeats and expiry use).
 */
export async function readClaim(
  em: EntityManager,
  jobId: string,
  claimId: string,
): Promise<{ remainingMs: number } | null> {
  const [row] = await em.execute<{ remaining_ms: number }[]>(
    `SELECT (extract(epoch FROM claim_expires_at - clock_timestamp()) * 1000)::float8 AS remaining_ms
       FROM job_claim WHERE job_id = ? AND claim_id = ?`,
    [jobId, claimId],
  );
  return row ? { remainingMs: Math.max(0, Math.ceil(Number(row.remaining_ms))) } : null;
}

/** Lapsed claims expired by one statement, at most: a sweep past it takes the rest in another. */
const SWEEP_LIMIT = 5_000;

export interface ExpiredClaim {
  jobId: string;
  claimId: string;
}

/**
 * The reaper (docs/agents.md "Writing your own agent", leases): every claim whose deadline has passed, by the
 * database's clock, is deleted and its job, when the table's `leaseExpiry` row applies to it (in
 * progress, its cancel not asked), returned to the queue, in one statement per `SWEEP_LIMIT` claims.
 * Whichever lease's timer fires first sweeps them all; the other leases find theirs gone. Jobs are
 * locked first, in id order — the order every status move takes (job row, then its claim), so a
 * sweep racing an agent's report or another sweep never deadlocks — and a job whose row a report
 * holds right now is skipped: the report ends its claim. A heartbeat that commits first leaves its
 * claim unexpired (the deadline is checked again on the locked row). Like the claim, it wakes no
 * release: queued and in_progress are both "not ended yet" to a release, and a thousand expiries
 * together would otherwise wake a thousand releases for nothing. Each expiry is counted on the job;
 * the one that reaches its agent's `maxDeliveries` ends the job `failure` (`deliveryCap`), and a
 * claim whose cancel deadline passed ends its job `cancelled` (`cancelDeadline`), each through
 * `changeJobStatus`, which wakes its release, in the sweep's transaction.
 */
export async function expireLapsedClaims(em: EntityManager): Promise<ExpiredClaim[]> {
  const { actor, requestId } = SYSTEM_ORIGIN;
  const expired: ExpiredClaim[] = [];
  for (;;) {
    const rows = await em.transactional(async (tx) => {
      const swept = await tx.execute<SweptClaim[]>(SWEEP_LAPSED_CLAIMS, [
        SWEEP_LIMIT,
        actor.type,
        actor.id,
        actor.name,
        requestId,
      ]);
      await endOverdueAndPoisonJobs(tx, swept);
      return swept;
    });
    for (const row of rows) {
      leaseReaperLag.observe(Math.max(0, Number(row.lag_seconds)));
      expired.push({ jobId: row.job_id, claimId: row.claim_id });
    }
    if (rows.length > 0) leaseExpiries.inc(rows.length);
    if (rows.length < SWEEP_LIMIT) return expired;
  }
}

/** A claim the sweep deleted, with what became of its job. */
interface SweptClaim {
  job_id: string;
  claim_id: string;
  lag_seconds: number;
  expired_leases: number | null;
  max_deliveries: number | null;
  cancel_overdue: boolean;
}

/** A text of the table (a message) as an SQL literal. */
function textSql(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

const REQUEUED_MESSAGE_SQL = textSql(EXPIRY_MOVE.message!);

/**
 * The audit events of a sweep: each deleted claim's `lease.expired`, and each requeued job's move
 * (`job.status_changed`), as the rows db/audit.ts `auditEventsInsertFrom` takes.
 */
const SWEEP_EVENTS = `SELECT j.workspace_id, e.action, 'job', j.id::text, e.changes,
            jsonb_strip_nulls(jsonb_build_object('jobId', j.id, 'releaseId', j.release_id,
              'workflowRunId', j.workflow_run_id, 'claimId', g.claim_id, 'from', e.from_status,
              'to', e.to_status, 'message', e.message)),
            j.deployment_id
       FROM gone g JOIN job j ON j.id = g.job_id LEFT JOIN requeued r ON r.id = g.job_id
      CROSS JOIN LATERAL (VALUES
              ('lease.expired', '[]'::jsonb, NULL, NULL, NULL),
              ('job.status_changed', '["message", "status"]'::jsonb, ${fromStatusSql(EXPIRY_MOVE.from)}, ${jobStatusListSql([statusInto('leaseExpiry')])}, ${REQUEUED_MESSAGE_SQL})
            ) AS e(action, changes, from_status, to_status, message)
      WHERE e.action = 'lease.expired' OR r.id IS NOT NULL`;

/**
 * One sweep of up to `SWEEP_LIMIT` lapsed claims (`expireLapsedClaims`): the claims deleted, their
 * jobs queued again with the expiry counted (the `leaseExpiry` row's statuses, cancel guard and
 * message), and both audited, in one statement.
 */
const SWEEP_LAPSED_CLAIMS = `WITH lapsed AS (
     SELECT j.id FROM job_claim c JOIN job j ON j.id = c.job_id
      WHERE c.claim_expires_at <= clock_timestamp()
      ORDER BY j.id
      LIMIT ?
        FOR UPDATE OF j SKIP LOCKED
   ), gone AS (
     DELETE FROM job_claim c USING lapsed
      WHERE c.job_id = lapsed.id AND c.claim_expires_at <= clock_timestamp()
     RETURNING c.job_id, c.claim_id, c.claim_expires_at
   ), requeued AS (
     UPDATE job j SET status = ${jobStatusListSql([statusInto('leaseExpiry')])}, started_at = NULL, updated_at = now(),
            expired_leases = j.expired_leases + 1,
            message = ${REQUEUED_MESSAGE_SQL}
       FROM job_agent a
      WHERE j.id IN (SELECT job_id FROM gone) AND j.status IN (${jobStatusListSql(EXPIRY_MOVE.from)})
        AND a.id = j.job_agent_id AND ${cancelGuardSql(EXPIRY_MOVE.cancel, 'j')}
     RETURNING j.id, j.expired_leases, coalesce((a.config->>'maxDeliveries')::int, ${DEFAULT_MAX_DELIVERIES}) AS max_deliveries
   ), audited AS (
     ${auditEventsInsertFrom(SWEEP_EVENTS, ['?::text', '?::text', '?::text', '?::text'])}
   )
   SELECT g.job_id, g.claim_id, extract(epoch FROM clock_timestamp() - g.claim_expires_at)::float8 AS lag_seconds,
          r.expired_leases, r.max_deliveries,
          EXISTS (SELECT 1 FROM job j WHERE j.id = g.job_id AND j.completed_at IS NULL
                    AND j.cancel_requested_at IS NOT NULL) AS cancel_overdue
     FROM gone g LEFT JOIN requeued r ON r.id = g.job_id`;

/**
 * The swept jobs that end here, in the sweep's transaction (their rows are still locked), each
 * through the one path of status moves as its row of the table says: a claim whose cancel deadline
 * passed ends its job as asked, whatever the agent does (`cancelDeadline`); a poison job, whose
 * leases expired as often as its agent allows, ends before any agent can claim it again
 * (`deliveryCap`).
 */
async function endOverdueAndPoisonJobs(tx: EntityManager, swept: readonly SweptClaim[]): Promise<void> {
  for (const row of swept) {
    if (row.cancel_overdue) {
      await changeJobStatus(tx, {}, row.job_id, { event: 'cancelDeadline' });
      continue;
    }
    if (row.expired_leases === null || !deliveryCapReached(row.expired_leases, row.max_deliveries!)) continue;
    await changeJobStatus(tx, {}, row.job_id, {
      event: 'deliveryCap',
      message: deliveryCapMessage(row.expired_leases),
    });
    deliveryLimits.inc();
  }
}
