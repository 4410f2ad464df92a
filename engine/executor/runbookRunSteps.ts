import type { EntityManager } from '@mikro-orm/postgresql';
import type { RunJobState, RunbookRunStatus } from '../../domain/runbookRunProgress';

/**
 * A runbook run's Temporal workflow reads and writes of its own run (activities/runbookRun.ts runs
 * them). Each is idempotent: Temporal retries a step whose worker died. The tables keep Ctrlplane's
 * names: `workflow_run`, and `job.workflow_run_id`.
 */

/** The run's status and its jobs, in one query; null once the run is gone (its runbook was deleted). */
export async function runbookRunJobs(
  em: EntityManager,
  runId: string,
): Promise<{ status: RunbookRunStatus; jobs: RunJobState[] } | null> {
  const [row] = await em.execute<{ status: RunbookRunStatus; jobs: RunJobState[] }[]>(
    `SELECT r.status,
            coalesce((SELECT json_agg(json_build_object('id', j.id, 'status', j.status, 'agentType', j.agent_type)
                                      ORDER BY j.created_at, j.id)
                        FROM job j WHERE j.workflow_run_id = r.id), '[]') AS jobs
       FROM workflow_run r WHERE r.id = ?`,
    [runId],
  );
  return row ?? null;
}

/** Records how the run ended, once. */
export async function finishRunbookRun(
  em: EntityManager,
  runId: string,
  status: Exclude<RunbookRunStatus, 'running'>,
): Promise<void> {
  await em.execute(
    `UPDATE workflow_run SET status = ?, completed_at = now() WHERE id = ? AND status = 'running'`,
    [status, runId],
  );
}
