import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobStatus } from '../../domain/jobStatus';
import { OUTBOX_CHANNEL, outboxTraceContext } from '../outbox';
import { leaseExpiries, leaseReaperLag } from '../domainMetrics';

/**
 * Claiming and reaping (SPEC "Pull job agents"). A claim is ONE statement: it moves a queued job of
 * the agent to in_progress and — for an agent with a lease (phase V2) — inserts the claim record
 * and the outbox row that starts the claim's lease workflow, and notifies the relay. Either all of
 * it commits or none of it does: a committed claim record always has its lease workflow coming (the
 * relay starts it even if this process dies right after the commit), and a failed claim leaves
 * nothing behind. Concurrent claims of one job serialize on the row; exactly one sees it queued.
 */

export interface LeaseGrant {
  claimId: string;
  leaseSeconds: number;
  expiresAt: string;
}

export type ClaimOutcome =
  | { outcome: 'claimed'; jobId: string; lease: LeaseGrant | null }
  | { outcome: 'conflict'; status: JobStatus }
  | { outcome: 'not_found' };

export interface ClaimRequest {
  workspaceId: string;
  jobAgentId: string;
  jobId: string;
  claimId: string;
  leaseSeconds: number | null;
}

export async function claimJob(em: EntityManager, request: ClaimRequest): Promise<ClaimOutcome> {
  const [row] = await em.execute<
    {
      id: string;
      claim_id: string | null;
      lease_seconds: number | null;
      claim_expires_at: string | null;
    }[]
  >(
    `WITH claimed AS (
       UPDATE job SET status = 'in_progress', started_at = coalesce(started_at, now()), updated_at = now()
        WHERE id = ? AND job_agent_id = ? AND workspace_id = ? AND status = 'queued'
        RETURNING id, job_agent_id, workspace_id
     ), lease AS (
       INSERT INTO job_claim (job_id, job_agent_id, workspace_id, claim_id, lease_seconds, claim_expires_at)
       SELECT id, job_agent_id, workspace_id, ?::uuid,
              ?::int,
              now() + make_interval(secs => ?::int)
         FROM claimed WHERE ?::int IS NOT NULL
       RETURNING job_id, claim_id, lease_seconds, claim_expires_at
     ), started AS (
       INSERT INTO outbox (kind, payload, trace_context)
       SELECT 'lease.start', jsonb_build_object('kind', 'lease.start', 'workspaceId', ?::text, 'jobAgentId', ?::text,
                                                'jobId', job_id, 'claimId', claim_id),
              ?::jsonb
         FROM lease
       RETURNING id
     )
     SELECT c.id, l.claim_id, l.lease_seconds, l.claim_expires_at,
            (SELECT count(*) FROM started) AS outbox,
            (SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM started LIMIT 1) AS notified
       FROM claimed c LEFT JOIN lease l ON l.job_id = c.id`,
    [
      request.jobId,
      request.jobAgentId,
      request.workspaceId,
      request.claimId,
      request.leaseSeconds,
      request.leaseSeconds,
      request.leaseSeconds,
      request.workspaceId,
      request.jobAgentId,
      outboxTraceContext(),
    ],
  );
  if (row) {
    return {
      outcome: 'claimed',
      jobId: row.id,
      lease: row.claim_id
        ? {
            claimId: row.claim_id,
            leaseSeconds: row.lease_seconds!,
            expiresAt: new Date(row.claim_expires_at!).toISOString(),
          }
        : null,
    };
  }
  const [job] = await em.execute<{ status: JobStatus }[]>(
    `SELECT status FROM job WHERE id = ? AND workspace_id = ? AND job_agent_id = ?`,
    [request.jobId, request.workspaceId, request.jobAgentId],
  );
  return job ? { outcome: 'conflict', status: job.status } : { outcome: 'not_found' };
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

/**
 * The reaper's step for one lease, fenced by the claim id: if that claim still exists and has
 * expired, it is deleted and its in_progress job goes back to queued. A late timer of an old claim
 * finds nothing to delete; a heartbeat that came first leaves the claim unexpired. Like the claim,
 * it does not wake the release: queued and in_progress are both "not ended yet" to a release, and
 * a thousand leases expiring together would otherwise wake a thousand releases for nothing.
 */
export async function expireClaim(em: EntityManager, jobId: string, claimId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    // Job row first, then its claim: the order every status move takes (changeJobStatus, cancel),
    // so an expiry racing an agent's report waits for it instead of deadlocking with it.
    await tx.execute('SELECT id FROM job WHERE id = ? FOR UPDATE', [jobId]);
    const [row] = await tx.execute<{ lag_seconds: number }[]>(
      `WITH gone AS (
         DELETE FROM job_claim WHERE job_id = ? AND claim_id = ? AND claim_expires_at <= clock_timestamp()
         RETURNING job_id, claim_expires_at
       ), requeued AS (
         UPDATE job SET status = 'queued', started_at = NULL, updated_at = now(),
                message = 'the lease expired without a heartbeat; back in the queue'
          WHERE id IN (SELECT job_id FROM gone) AND status = 'in_progress'
       )
       SELECT extract(epoch FROM clock_timestamp() - claim_expires_at)::float8 AS lag_seconds FROM gone`,
      [jobId, claimId],
    );
    if (!row) return false;
    leaseExpiries.inc();
    leaseReaperLag.observe(Math.max(0, Number(row.lag_seconds)));
    return true;
  });
}
