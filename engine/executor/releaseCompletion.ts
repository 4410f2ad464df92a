import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleasePhase } from '../../domain/releases';
import { openReleasesOfTargets, wakeReleases } from '../../db/releaseWake';
import { rollBackAfterFailure } from './rollback';
import { recordAuditEvents } from '../../db/audit';
import { releaseEvent } from '../../domain/audit';
import { releaseOfRow, type ReleaseIdentityRow } from '../../domain/orchestration';

export type FinalPhase = Exclude<ReleasePhase, 'pending' | 'running'>;

/**
 * Ends a release (once; later calls change nothing) and frees its target. A success makes it the
 * target's current release (docs/behaviour.md "Flow" step 7). The other open releases of the target are woken —
 * one of them may now run — and, after a success, so are this version's releases that wait in
 * other environments, whose progression rules may now pass, and the releases on this resource
 * whose version depends on this deployment. A failure may roll the target back (./rollback.ts).
 */
export async function finishRelease(
  em: EntityManager,
  releaseId: string,
  phase: FinalPhase,
  reason: string,
): Promise<boolean> {
  return em.transactional(async (tx) => {
    const [release] = await tx.execute<ReleaseIdentityRow[]>(
      `UPDATE release SET phase = ?, phase_reason = ?, completed_at = now(), updated_at = now()
        WHERE id = ? AND phase IN ('pending', 'running')
        RETURNING id, workspace_id, resource_id, environment_id, deployment_id, version_id`,
      [phase, reason, releaseId],
    );
    if (!release) return false;
    await recordAuditEvents(tx, [releaseEvent(`release.${phase}`, releaseOfRow(release), { reason })]);
    await tx.execute(
      `UPDATE release_target_state
          SET active_release_id = CASE WHEN active_release_id = ? THEN NULL ELSE active_release_id END,
              current_release_id = CASE WHEN ? THEN ? ELSE current_release_id END,
              current_version_id = CASE WHEN ? THEN ?::uuid ELSE current_version_id END,
              updated_at = now()
        WHERE resource_id = ? AND environment_id = ? AND deployment_id = ?`,
      [
        releaseId,
        phase === 'succeeded',
        releaseId,
        phase === 'succeeded',
        release.version_id,
        release.resource_id,
        release.environment_id,
        release.deployment_id,
      ],
    );
    const target = {
      resourceId: release.resource_id,
      environmentId: release.environment_id,
      deploymentId: release.deployment_id,
    };
    await wakeReleases(tx, await openReleasesOfTargets(tx, [target], releaseId));
    if (phase === 'succeeded') await wakeAfterSuccess(tx, release);
    if (phase === 'failed') await rollBackAfterFailure(tx, releaseId);
    return true;
  });
}

/**
 * After a success: this version's releases waiting in other environments whose progression rule this
 * success may let pass, and the releases on this resource whose version depends on this deployment.
 */
async function wakeAfterSuccess(
  tx: EntityManager,
  release: { resource_id: string; environment_id: string; deployment_id: string; version_id: string },
): Promise<void> {
  // Only the releases whose progression rule waits on this environment and whose threshold this
  // success meets: each is woken about once, however many targets succeed here.
  const waiting = await tx.execute<{ id: string }[]>(
    `WITH successes AS (
         SELECT count(DISTINCT r.resource_id)::int AS n FROM release r JOIN job j ON j.release_id = r.id
          WHERE r.version_id = ? AND r.environment_id = ? AND j.status = 'successful')
       SELECT DISTINCT w.id FROM release w, successes,
              jsonb_array_elements(coalesce(w.evaluation->'rules', '[]')) AS rule
        WHERE w.version_id = ? AND w.environment_id <> ? AND w.phase = 'pending'
          AND rule->>'kind' = 'environmentProgression' AND rule->>'state' = 'waiting'
          AND rule->'waitingOn'->>'environmentId' = ?::text
          AND (rule->'waitingOn'->>'successes')::int <= successes.n`,
    [
      release.version_id,
      release.environment_id,
      release.version_id,
      release.environment_id,
      release.environment_id,
    ],
  );
  // And the releases on this resource whose version depends on this deployment, or whose
  // deploymentDependency rule waits for some deployment here.
  const dependents = await tx.execute<{ id: string }[]>(
    `SELECT DISTINCT w.id FROM release w, jsonb_array_elements(coalesce(w.evaluation->'rules', '[]')) AS rule
        WHERE w.resource_id = ? AND w.deployment_id <> ? AND w.phase = 'pending'
          AND rule->>'state' = 'waiting'
          AND ((rule->>'kind' = 'versionDependency' AND rule->'waitingOn'->>'deploymentId' = ?::text)
               OR rule->>'kind' = 'deploymentDependency')`,
    [release.resource_id, release.deployment_id, release.deployment_id],
  );
  await wakeReleases(
    tx,
    [...waiting, ...dependents].map((row) => row.id),
  );
}
