import type { EntityManager } from '@mikro-orm/postgresql';
import { ACTIVE_JOB_STATUSES, type JobStatus } from '../../domain/jobStatus';
import { JobSchema, type Job } from '../../db/entities';
import { OUTBOX_CHANNEL, outboxTraceContext } from '../../db/outbox';
import { plainRecord } from '../../db/plainRecords';
import { deliveryLimits, leaseExpiries, leaseReaperLag } from '../metrics';
import { DEFAULT_MAX_DELIVERIES, LEASE_SHORTHAND_SECONDS } from '../../domain/jobAgents';
import { changeJobStatus } from './change';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';
import { AUDIT_EVENT_COLUMNS, SYSTEM_ORIGIN, type AuditOrigin } from '../../db/audit';

/**
 * Claiming and reaping (docs/behaviour.md "Pull job agents"). A claim is ONE statement: it moves a queued job of
 * the agent to in_progress and — for an agent with a lease — inserts the claim record
 * and the outbox row that starts the claim's lease workflow (which trails the claim: the answer
 * never waits on Temporal), notifies the relay, and returns the claimed job. Either all of
 * it commits or none of it does: a committed claim record always has its lease workflow coming (the
 * relay starts it even if this process dies right after the commit), and a failed claim leaves
 * nothing behind. Concurrent claims of one job serialize on the row; exactly one sees it queued.
 */

export interface LeaseGrant {
  claimId: string;
  leaseSeconds: number;
  expiresAt: string;
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
  | { outcome: 'conflict'; status: JobStatus }
  /** A hold keeps the queued job from agents (docs/behaviour.md "Holds and freezes"). */
  | { outcome: 'held'; hold: { id: string; reason: string; by: string } }
  | { outcome: 'not_found' };

export interface ClaimRequest {
  workspaceId: string;
  jobAgentId: string;
  jobId: string;
  claimId: string;
  /** Who claims: its audit events are theirs. */
  by: AuditOrigin;
}

/**
 * The claim (`claimJob`): $1 job, $2 agent, $3 workspace, $4 claim id, $5 trace context, $6–$9 the
 * audit actor's type, id and name and the request id. It reads the agent too (its type, name and
 * lease: `leaseSeconds`, or `LEASE_SHORTHAND_SECONDS` for `lease: true`), and claims only an `http-pull` agent's job; its audit events (the
 * job handed out, its move to in_progress) are written by the same statement. No row: no such agent
 * in the workspace.
 */
const CLAIM = preparedStatement(
  'claim_job',
  `WITH agent AS (
     SELECT name, type,
            CASE WHEN jsonb_typeof(config->'leaseSeconds') = 'number' THEN (config->>'leaseSeconds')::int
                 WHEN config->'lease' = 'true'::jsonb THEN ${LEASE_SHORTHAND_SECONDS} END AS lease_seconds
       FROM job_agent WHERE id = $2 AND workspace_id = $3
   ), claimed AS (
     UPDATE job SET status = 'in_progress', started_at = coalesce(started_at, now()), updated_at = now()
      WHERE id = $1 AND job_agent_id = $2 AND workspace_id = $3 AND status = 'queued'
        AND EXISTS (SELECT 1 FROM agent WHERE type = 'http-pull')
        AND NOT EXISTS (SELECT 1 FROM job_hold h WHERE h.job_id = $1) AND cancel_requested_at IS NULL
      RETURNING *
   ), lease AS (
     INSERT INTO job_claim (job_id, job_agent_id, workspace_id, claim_id, lease_seconds, claim_expires_at)
     SELECT c.id, c.job_agent_id, c.workspace_id, $4::uuid, a.lease_seconds, now() + make_interval(secs => a.lease_seconds)
       FROM claimed c CROSS JOIN agent a WHERE a.lease_seconds IS NOT NULL
     RETURNING job_id, claim_id, lease_seconds, claim_expires_at
   ), started AS (
     INSERT INTO outbox (kind, payload, trace_context)
     SELECT 'lease.start', jsonb_build_object('kind', 'lease.start', 'workspaceId', $3::text, 'jobAgentId', $2::text,
                                              'jobId', job_id, 'claimId', claim_id,
                                              'expiresAt', to_char(claim_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
            $5::jsonb
       FROM lease
     RETURNING id
   ), audited AS (
     INSERT INTO audit_event (${AUDIT_EVENT_COLUMNS})
     SELECT c.workspace_id, $6, $7, $8, $9, a.action, 'job', c.id::text, a.changes,
            jsonb_strip_nulls(jsonb_build_object('jobId', c.id, 'releaseId', c.release_id,
                                                 'workflowRunId', c.workflow_run_id, 'from', 'queued',
                                                 'to', 'in_progress', 'claimId', $4::text)),
            c.deployment_id
       FROM claimed c
      CROSS JOIN (VALUES ('job.claimed', '[]'::jsonb), ('job.status_changed', '["status"]'::jsonb)) AS a(action, changes)
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
 * and the first hold that keeps it back. Conflicts are common: agents race for one page.
 */
const UNCLAIMED_JOB = preparedStatement(
  'unclaimed_job',
  `SELECT j.status,
          (SELECT json_build_object('id', h.id, 'reason', h.reason, 'by', h.created_by_name)
             FROM job_hold jh JOIN hold h ON h.id = jh.hold_id WHERE jh.job_id = j.id
            ORDER BY h.created_at, h.id LIMIT 1) AS hold
     FROM job j WHERE j.id = $1 AND j.workspace_id = $2 AND j.job_agent_id = $3`,
);

export async function claimJob(em: EntityManager, request: ClaimRequest): Promise<ClaimOutcome> {
  const { actor, requestId } = request.by;
  const [row] = await runPrepared<
    Record<string, unknown> & {
      claiming_agent_name: string;
      claiming_agent_type: string;
      id: string | null;
      lease_claim_id: string | null;
      lease_length: number | null;
      lease_expires_at: Date | null;
    }
  >(em, CLAIM, [
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
  if (row.id) {
    const {
      claiming_agent_name: _name,
      claiming_agent_type: _type,
      lease_claim_id: claimId,
      lease_length: leaseSeconds,
      lease_expires_at: expiresAt,
      ...job
    } = row;
    return {
      outcome: 'claimed',
      agent,
      // The claimed job as the statement returned it: the answer needs no second read.
      job: plainRecord(em, JobSchema, job),
      lease: claimId
        ? { claimId, leaseSeconds: leaseSeconds!, expiresAt: new Date(expiresAt!).toISOString() }
        : null,
    };
  }
  const [job] = await runPrepared<{
    status: JobStatus;
    hold: { id: string; reason: string; by: string } | null;
  }>(em, UNCLAIMED_JOB, [request.jobId, request.workspaceId, request.jobAgentId]);
  if (!job) return { outcome: 'not_found' };
  return job.status === 'queued' && job.hold
    ? { outcome: 'held', hold: job.hold }
    : { outcome: 'conflict', status: job.status };
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
const REQUEUED_MESSAGE_SQL = "'the lease expired without a heartbeat; back in the queue'";

const SWEEP_LIMIT = 5_000;

export interface ExpiredClaim {
  jobId: string;
  claimId: string;
}

/**
 * The reaper (docs/agents.md "Writing your own agent", leases): every claim whose deadline has passed, by the
 * database's clock, is deleted and its in_progress job returned to the queue, in one statement
 * per `SWEEP_LIMIT` claims. Whichever lease's timer fires first sweeps them all; the other leases
 * find theirs gone. Jobs are locked first, in id order — the order every status move takes (job
 * row, then its claim), so a sweep racing an agent's report or another sweep never deadlocks — and
 * a job whose row a report holds right now is skipped: the report ends its claim. A heartbeat that
 * commits first leaves its claim unexpired (the deadline is checked again on the locked row). Like
 * the claim, it wakes no release: queued and in_progress are both "not ended yet" to a release, and
 * a thousand expiries together would otherwise wake a thousand releases for nothing. Each expiry is
 * counted on the job; the one that reaches its agent's `maxDeliveries` ends the job `failure` (the
 * delivery cap), and a claim whose cancel deadline passed ends its job `cancelled` (graceful cancel),
 * each through `changeJobStatus`, which wakes its release, in the sweep's transaction.
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

/**
 * One sweep of up to `SWEEP_LIMIT` lapsed claims (`expireLapsedClaims`): the claims deleted, their
 * jobs queued again with the expiry counted, and both audited, in one statement.
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
     UPDATE job j SET status = 'queued', started_at = NULL, updated_at = now(),
            expired_leases = j.expired_leases + 1,
            message = ${REQUEUED_MESSAGE_SQL}
       FROM job_agent a
      WHERE j.id IN (SELECT job_id FROM gone) AND j.status = 'in_progress' AND a.id = j.job_agent_id
        AND j.cancel_requested_at IS NULL
     RETURNING j.id, j.expired_leases, coalesce((a.config->>'maxDeliveries')::int, ${DEFAULT_MAX_DELIVERIES}) AS max_deliveries
   ), actor AS (
     SELECT ?::text AS type, ?::text AS id, ?::text AS name, ?::text AS request_id
   ), audited AS (
     INSERT INTO audit_event (${AUDIT_EVENT_COLUMNS})
     SELECT j.workspace_id, actor.type, actor.id, actor.name, actor.request_id, e.action, 'job', j.id::text,
            e.changes, jsonb_strip_nulls(jsonb_build_object('jobId', j.id, 'releaseId', j.release_id,
              'workflowRunId', j.workflow_run_id, 'claimId', g.claim_id, 'from', e.from_status,
              'to', e.to_status, 'message', e.message)),
            j.deployment_id
       FROM gone g JOIN job j ON j.id = g.job_id LEFT JOIN requeued r ON r.id = g.job_id CROSS JOIN actor
      CROSS JOIN LATERAL (VALUES
              ('lease.expired', '[]'::jsonb, NULL, NULL, NULL),
              ('job.status_changed', '["message", "status"]'::jsonb, 'in_progress', 'queued', ${REQUEUED_MESSAGE_SQL})
            ) AS e(action, changes, from_status, to_status, message)
      WHERE e.action = 'lease.expired' OR r.id IS NOT NULL
   )
   SELECT g.job_id, g.claim_id, extract(epoch FROM clock_timestamp() - g.claim_expires_at)::float8 AS lag_seconds,
          r.expired_leases, r.max_deliveries,
          EXISTS (SELECT 1 FROM job j WHERE j.id = g.job_id AND j.completed_at IS NULL
                    AND j.cancel_requested_at IS NOT NULL) AS cancel_overdue
     FROM gone g LEFT JOIN requeued r ON r.id = g.job_id`;

/** The swept jobs that end here, in the sweep's transaction (their rows are still locked). */
async function endOverdueAndPoisonJobs(tx: EntityManager, swept: readonly SweptClaim[]): Promise<void> {
  // A poison job: its leases expired as often as its agent allows. It ends here, through the
  // one path of status moves, before any agent can claim it again (its row is still locked).
  for (const row of swept) {
    // A cancel asked of its agent whose deadline passed: it ends as asked, whatever the agent does.
    if (row.cancel_overdue) {
      await changeJobStatus(tx, {}, row.job_id, {
        status: 'cancelled',
        message: 'cancelled: the agent did not stop the job within the grace period',
        from: ACTIVE_JOB_STATUSES,
      });
      continue;
    }
    if (row.expired_leases === null || row.expired_leases < row.max_deliveries!) continue;
    await changeJobStatus(tx, {}, row.job_id, {
      status: 'failure',
      message: `delivery limit reached after ${row.expired_leases} leases`,
      from: ['queued'],
    });
    deliveryLimits.inc();
  }
}
