import type { EntityManager } from '@mikro-orm/postgresql';
import type { GateEvaluation } from '../../domain/gates';
import type { ReleaseProgress } from '../../domain/releaseProgress';
import type { Measurement } from '../../db/entities';
import { recordAuditEvents } from '../../db/audit';
import { evaluationEvents } from '../../domain/audit';
import { releaseOfRow, type ReleaseIdentityRow } from '../../domain/orchestration';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';

/**
 * The release workflow's reads and writes of its own release (activities/release.ts runs them).
 * Each is idempotent: Temporal retries a step whose worker died.
 */

const RELEASE_PROGRESS = preparedStatement(
  'release_progress',
  `SELECT rl.phase,
          coalesce((SELECT json_agg(json_build_object('id', j.id, 'status', j.status, 'agentType', j.agent_type,
                                      'attempt', j.attempt) ORDER BY j.attempt, j.created_at, j.id)
                      FROM job j WHERE j.release_id = rl.id), '[]') AS jobs,
          coalesce((SELECT json_agg(json_build_object('id', v.id, 'jobId', v.job_id, 'trigger', v.trigger,
                                      'status', v.status, 'metrics', v.metrics) ORDER BY v.created_at, v.id)
                      FROM job_verification v JOIN job j ON j.id = v.job_id WHERE j.release_id = rl.id), '[]')
            AS verifications
     FROM release rl WHERE rl.id = $1`,
);

/** Where the release's jobs and verifications stand, in one query: the step a woken release runs first. */
export async function releaseProgress(em: EntityManager, releaseId: string): Promise<ReleaseProgress | null> {
  const [row] = await runPrepared<Omit<ReleaseProgress, 'attempt'>>(em, RELEASE_PROGRESS, [releaseId]);
  if (!row) return null;
  return { ...row, attempt: Math.max(0, ...row.jobs.map((job) => job.attempt)) };
}

/**
 * Keeps the latest evaluation on a pending release, so GET /releases/{id} can say why it waits, with
 * the audit events of what it decided that the previous one had not (domain/audit.ts).
 */
export async function recordEvaluation(
  em: EntityManager,
  releaseId: string,
  evaluation: GateEvaluation,
): Promise<void> {
  await em.transactional(async (tx) => {
    const [row] = await tx.execute<(ReleaseIdentityRow & { previous: GateEvaluation | null })[]>(
      `UPDATE release r SET evaluation = ?::jsonb, phase_reason = ?, updated_at = now()
         FROM release old
        WHERE old.id = r.id AND r.id = ? AND r.phase = 'pending'
       RETURNING r.id, r.workspace_id, r.deployment_id, r.environment_id, r.resource_id, r.version_id,
                 old.evaluation AS previous`,
      [JSON.stringify(evaluation), evaluation.reason, releaseId],
    );
    if (row) await recordAuditEvents(tx, evaluationEvents(releaseOfRow(row), row.previous, evaluation));
  });
}

/** One measurement of a verification's metric; the first one starts the verification. */
export async function appendMeasurement(
  em: EntityManager,
  verificationId: string,
  measurement: Measurement,
): Promise<void> {
  await em.execute(
    `UPDATE job_verification SET measurements = measurements || ?::jsonb,
            status = CASE WHEN status = 'pending' THEN 'running' ELSE status END,
            started_at = coalesce(started_at, now())
      WHERE id = ?`,
    [JSON.stringify([measurement]), verificationId],
  );
}

/** A verification's verdict, once: a settled verification keeps its first. */
export async function settleVerification(
  em: EntityManager,
  verificationId: string,
  passed: boolean,
  message: string,
): Promise<void> {
  await em.execute(
    `UPDATE job_verification SET status = ?, message = ?, completed_at = now(), started_at = coalesce(started_at, now())
      WHERE id = ? AND status IN ('pending', 'running')`,
    [passed ? 'passed' : 'failed', message, verificationId],
  );
}
