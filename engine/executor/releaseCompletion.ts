import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleasePhase } from '../../domain/releases';
import { openReleasesOfTargets, wakeReleases } from '../../db/releaseWake';
import { rollBackAfterFailure } from './rollback';
import { wakeRolloutsOf } from './rollouts';
import { recordAuditEvents } from '../../db/audit';
import { releaseEvent } from '../../domain/audit';
import { releaseOfRow, type ReleaseIdentityRow } from '../../domain/orchestration';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';

export type FinalPhase = Exclude<ReleasePhase, 'pending' | 'running'>;

/** The release $3 ends in phase $1 with reason $2, if it has not ended. */
const FINISH_RELEASE = preparedStatement(
  'finish_release',
  `UPDATE release SET phase = $1, phase_reason = $2, completed_at = now(), updated_at = now()
    WHERE id = $3 AND phase IN ('pending', 'running')
    RETURNING id, workspace_id, resource_id, environment_id, deployment_id, version_id`,
);

/**
 * The target ($4–$6) of the release $1 that ended is free; when it succeeded ($2), the release is
 * the target's current one, its version ($3) the current version.
 */
const FREE_TARGET = preparedStatement(
  'free_release_target',
  `UPDATE release_target_state
      SET active_release_id = CASE WHEN active_release_id = $1 THEN NULL ELSE active_release_id END,
          current_release_id = CASE WHEN $2::boolean THEN $1 ELSE current_release_id END,
          current_version_id = CASE WHEN $2::boolean THEN $3::uuid ELSE current_version_id END,
          updated_at = now()
    WHERE resource_id = $4 AND environment_id = $5 AND deployment_id = $6`,
);

/**
 * Pending releases of the version $1 in other environments whose progression rule waits on the
 * environment $2 and whose threshold its successes now meet.
 */
const PROGRESSIONS_WAITING_ON = preparedStatement(
  'progressions_waiting_on',
  `WITH successes AS (
     SELECT count(DISTINCT r.resource_id)::int AS n FROM release r JOIN job j ON j.release_id = r.id
      WHERE r.version_id = $1 AND r.environment_id = $2 AND j.status = 'successful' AND r.phase <> 'cancelled')
   SELECT DISTINCT w.id FROM release w, successes,
          jsonb_array_elements(coalesce(w.evaluation->'rules', '[]')) AS rule
    WHERE w.version_id = $1 AND w.environment_id <> $2 AND w.phase = 'pending'
      AND rule->>'kind' = 'environmentProgression' AND rule->>'state' = 'waiting'
      AND rule->'waitingOn'->>'environmentId' = $2::text
      AND (rule->'waitingOn'->>'successes')::int <= successes.n`,
);

/**
 * Pending releases on the resource $1 of other deployments than $2 whose version depends on $2, or
 * whose deploymentDependency rule waits.
 */
const DEPENDENTS_ON = preparedStatement(
  'dependents_on_deployment',
  `SELECT DISTINCT w.id FROM release w, jsonb_array_elements(coalesce(w.evaluation->'rules', '[]')) AS rule
    WHERE w.resource_id = $1 AND w.deployment_id <> $2 AND w.phase = 'pending'
      AND rule->>'state' = 'waiting'
      AND ((rule->>'kind' = 'versionDependency' AND rule->'waitingOn'->>'deploymentId' = $2::text)
           OR rule->>'kind' = 'deploymentDependency')`,
);

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
    const [release] = await runPrepared<ReleaseIdentityRow>(tx, FINISH_RELEASE, [phase, reason, releaseId]);
    if (!release) return false;
    await recordAuditEvents(tx, [releaseEvent(`release.${phase}`, releaseOfRow(release), { reason })]);
    await runPrepared(tx, FREE_TARGET, [
      releaseId,
      phase === 'succeeded',
      release.version_id,
      release.resource_id,
      release.environment_id,
      release.deployment_id,
    ]);
    const target = {
      resourceId: release.resource_id,
      environmentId: release.environment_id,
      deploymentId: release.deployment_id,
    };
    await wakeReleases(tx, await openReleasesOfTargets(tx, [target], releaseId));
    await wakeRolloutsOf(tx, releaseId);
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
  const waiting = await runPrepared<{ id: string }>(tx, PROGRESSIONS_WAITING_ON, [
    release.version_id,
    release.environment_id,
  ]);
  // And the releases on this resource whose version depends on this deployment, or whose
  // deploymentDependency rule waits for some deployment here.
  const dependents = await runPrepared<{ id: string }>(tx, DEPENDENTS_ON, [
    release.resource_id,
    release.deployment_id,
  ]);
  await wakeReleases(
    tx,
    [...waiting, ...dependents].map((row) => row.id),
  );
}
