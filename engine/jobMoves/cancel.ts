import type { EntityManager } from '@mikro-orm/postgresql';
import { DEFAULT_CANCEL_GRACE_SECONDS } from '../../domain/jobAgents';
import { movesInto } from '../../domain/jobStatus';
import { enqueueOrchestrations } from '../../db/outbox';

/**
 * A release's cancel, in the caller's transaction. A job an agent holds under a lease is asked to
 * stop first (docs/behaviour.md "Pull job agents": graceful cancel): its heartbeats and polls say so
 * with a deadline (now plus the agent's `cancelGraceSeconds`), its claim ends no later than that, and
 * its lease workflow is woken to read the earlier deadline; the agent reports `cancelled`, or the
 * reaper ends it `cancelled` at the deadline. Every other job that has not ended is `cancelled` at
 * once, its claim with it. The caller wakes the release, whose workflow gives each pushed job a last
 * look (which cancels its remote run). Returns the jobs cancelled or asked to stop.
 */
export async function cancelOpenJobs(
  em: EntityManager,
  releaseId: string,
  message: string,
): Promise<string[]> {
  const rows = await em.execute<{ id: string; claim_id: string | null; asked: boolean }[]>(
    `WITH asked AS (
       UPDATE job j SET cancel_requested_at = now(), updated_at = now(), message = ?,
              cancel_deadline = now() + make_interval(secs => coalesce((a.config->>'cancelGraceSeconds')::int, ${DEFAULT_CANCEL_GRACE_SECONDS}))
         FROM job_claim c, job_agent a
        WHERE j.release_id = ? AND j.status = 'in_progress' AND j.cancel_requested_at IS NULL
          AND c.job_id = j.id AND a.id = j.job_agent_id
        RETURNING j.id, c.claim_id, j.cancel_deadline
     ), shortened AS (
       UPDATE job_claim c SET claim_expires_at = least(c.claim_expires_at, asked.cancel_deadline)
         FROM asked WHERE c.job_id = asked.id
     ), cancelled AS (
       UPDATE job SET status = 'cancelled', message = coalesce(message, ?), completed_at = now(), updated_at = now()
        WHERE release_id = ? AND status = ANY(?::text[]) AND cancel_requested_at IS NULL
          AND id NOT IN (SELECT id FROM asked)
        RETURNING id
     ), ended AS (
       DELETE FROM job_claim WHERE job_id IN (SELECT id FROM cancelled) RETURNING job_id, claim_id
     )
     SELECT c.id, e.claim_id, false AS asked FROM cancelled c LEFT JOIN ended e ON e.job_id = c.id
     UNION ALL
     SELECT id, claim_id, true FROM asked`,
    [`cancel requested: ${message}`, releaseId, message, releaseId, `{${movesInto('cancelled').join(',')}}`],
  );
  await enqueueOrchestrations(
    em,
    rows.flatMap((row) =>
      row.claim_id
        ? [
            {
              kind: row.asked ? ('lease.wake' as const) : ('lease.end' as const),
              jobId: row.id,
              claimId: row.claim_id,
            },
          ]
        : [],
    ),
  );
  return rows.map((row) => row.id);
}
