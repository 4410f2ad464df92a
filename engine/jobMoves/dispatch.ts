import type { EntityManager } from '@mikro-orm/postgresql';
import { canMoveJob, isTerminalJobStatus, type JobStatus } from '../../domain/jobStatus';

/**
 * The move a dispatch makes: a pending job becomes queued (a pull agent's), triggered (sent to a
 * push agent's service, linked to its run), in_progress (the test runner), or ends (a configuration
 * that cannot be dispatched). Only a pending job moves, so a retried dispatch changes nothing twice.
 * A pending job has no claim, and the release workflow that dispatches learns the move from the
 * dispatch's answer: there is no other side effect. Returns whether the job moved.
 */
export async function moveDispatchedJob(
  em: EntityManager,
  jobId: string,
  to: JobStatus,
  fields: { message?: string | null; externalId?: string | null } = {},
): Promise<boolean> {
  if (!canMoveJob('pending', to) || to === 'pending')
    throw new Error(`a dispatch cannot move a job to ${to}`);
  const rows = await em.execute<{ id: string }[]>(
    `UPDATE job SET status = ?,
            message = CASE WHEN ?::boolean THEN ? ELSE message END,
            external_id = coalesce(?, external_id),
            started_at = CASE WHEN ?::boolean THEN coalesce(started_at, now()) ELSE started_at END,
            completed_at = CASE WHEN ?::boolean THEN now() ELSE completed_at END,
            updated_at = now()
      WHERE id = ? AND status = 'pending'
      RETURNING id`,
    [
      to,
      fields.message !== undefined,
      fields.message ?? null,
      fields.externalId ?? null,
      to === 'in_progress',
      isTerminalJobStatus(to),
      jobId,
    ],
  );
  return rows.length > 0;
}
