import type { EntityManager } from '@mikro-orm/postgresql';
import { DEFAULT_CANCEL_GRACE_SECONDS } from '../../domain/jobAgents';
import { CLAIM_LIFECYCLE, statusInto } from '../../domain/claimLifecycle';
import { jobStatusListSql } from '../../db/sql';
import { enqueueOrchestrations } from '../../db/outbox';
import { recordAuditEvents, type AuditOrigin } from '../../db/audit';
import { jobRowEvent } from '../../domain/audit';
import { cancelGuardSql } from './claims';

const ASKED = CLAIM_LIFECYCLE.cancelAsked;
const AT_ONCE = CLAIM_LIFECYCLE.cancelAtOnce;

/** Whose open jobs a cancel ends: a release's, or a runbook run's. */
export type CancelScope = { releaseId: string } | { runbookRunId: string };

/**
 * A release's or a runbook run's cancel, in the caller's transaction. A job an agent holds under a lease is asked to
 * stop first (docs/behaviour.md "Pull job agents": graceful cancel): its heartbeats and polls say so
 * with a deadline (now plus the agent's `cancelGraceSeconds`), its claim ends no later than that, and
 * its lease workflow is woken to read the earlier deadline; the agent reports `cancelled`, or the
 * reaper ends it `cancelled` at the deadline. Every other job that has not ended is `cancelled` at
 * once, its claim with it. The caller wakes the release, whose workflow gives each pushed job a last
 * look (which cancels its remote run). Each job cancelled at once is a `job.status_changed` audit
 * event. Which jobs are asked and which cancelled at once, and into what, are the `cancelAsked` and
 * `cancelAtOnce` rows of the claim lifecycle's table (domain/claimLifecycle.ts). Returns the jobs
 * cancelled or asked to stop.
 */
export async function cancelOpenJobs(
  em: EntityManager,
  scope: CancelScope,
  message: string,
  by: AuditOrigin,
): Promise<string[]> {
  const [owner, ownerId] =
    'releaseId' in scope ? ['release_id', scope.releaseId] : ['workflow_run_id', scope.runbookRunId];
  const rows = await em.execute<
    {
      id: string;
      claim_id: string | null;
      asked: boolean;
      workspace_id: string;
      release_id: string | null;
      workflow_run_id: string | null;
      deployment_id: string | null;
      from_status: string;
    }[]
  >(
    `WITH asked AS (
       UPDATE job j SET cancel_requested_at = now(), updated_at = now(), message = ?,
              cancel_deadline = now() + make_interval(secs => coalesce((a.config->>'cancelGraceSeconds')::int, ${DEFAULT_CANCEL_GRACE_SECONDS}))
         FROM job_claim c, job_agent a
        WHERE j.${owner} = ? AND j.status IN (${jobStatusListSql(ASKED.from)}) AND ${cancelGuardSql(ASKED.cancel, 'j')}
          AND c.job_id = j.id AND a.id = j.job_agent_id
        RETURNING j.id, c.claim_id, j.cancel_deadline
     ), shortened AS (
       UPDATE job_claim c SET claim_expires_at = least(c.claim_expires_at, asked.cancel_deadline)
         FROM asked WHERE c.job_id = asked.id
     ), cancelled AS (
       UPDATE job j SET status = ${jobStatusListSql([statusInto('cancelAtOnce')])}, message = coalesce(j.message, ?),
              completed_at = now(), updated_at = now()
         FROM job old
        WHERE old.id = j.id AND j.${owner} = ? AND j.status = ANY(?::text[]) AND ${cancelGuardSql(AT_ONCE.cancel, 'j')}
          AND j.id NOT IN (SELECT id FROM asked)
        RETURNING j.id, j.workspace_id, j.release_id, j.workflow_run_id, j.deployment_id, old.status AS from_status
     ), ended AS (
       DELETE FROM job_claim WHERE job_id IN (SELECT id FROM cancelled) RETURNING job_id, claim_id
     )
     SELECT c.id, e.claim_id, false AS asked, c.workspace_id, c.release_id, c.workflow_run_id, c.deployment_id,
            c.from_status
       FROM cancelled c LEFT JOIN ended e ON e.job_id = c.id
     UNION ALL
     SELECT id, claim_id, true, NULL, NULL, NULL, NULL, NULL FROM asked`,
    [`cancel requested: ${message}`, ownerId, message, ownerId, `{${AT_ONCE.from.join(',')}}`],
  );
  await recordAuditEvents(
    em,
    rows
      .filter((row) => !row.asked)
      .map((row) =>
        jobRowEvent(row, { status: statusInto('cancelAtOnce'), message }, row.from_status, ['status']),
      ),
    by,
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
