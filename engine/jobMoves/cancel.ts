import type { EntityManager } from '@mikro-orm/postgresql';
import { movesInto } from '../../domain/jobStatus';
import { enqueueOrchestrations } from '../../db/outbox';

/**
 * A release's cancel ends every job of it that has not ended, `cancelled`, in the caller's
 * transaction: each claim on them ends with its lease workflow. The caller wakes the release, whose
 * workflow gives each pushed job a last look (which cancels its remote run). Returns the jobs cancelled.
 */
export async function cancelOpenJobs(
  em: EntityManager,
  releaseId: string,
  message: string,
): Promise<string[]> {
  const rows = await em.execute<{ id: string; claim_id: string | null }[]>(
    `WITH cancelled AS (
       UPDATE job SET status = 'cancelled', message = coalesce(message, ?), completed_at = now(), updated_at = now()
        WHERE release_id = ? AND status = ANY(?::text[])
        RETURNING id
     ), ended AS (
       DELETE FROM job_claim WHERE job_id IN (SELECT id FROM cancelled) RETURNING job_id, claim_id
     )
     SELECT c.id, e.claim_id FROM cancelled c LEFT JOIN ended e ON e.job_id = c.id`,
    [message, releaseId, `{${movesInto('cancelled').join(',')}}`],
  );
  await enqueueOrchestrations(
    em,
    rows.flatMap((row) =>
      row.claim_id ? [{ kind: 'lease.end' as const, jobId: row.id, claimId: row.claim_id }] : [],
    ),
  );
  return rows.map((row) => row.id);
}
