import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanValidationInput } from '../domain/planValidation';
import type { ReleaseRow } from './jobCreation';
import type { SecretBox } from './secrets';
import { planTargets, type PlanTargetRow } from './targetPlans';

interface ReleasePlanRow extends ReleaseRow, PlanTargetRow {
  deployment: PlanValidationInput['deployment'];
  resource: PlanValidationInput['resource'];
  version: PlanValidationInput['version'];
}

/**
 * What a `planValidationOpa` rule sees of a release (domain/planValidation.ts): its target and
 * version, and its jobs' rendered inputs against those of the release running there now. Null for
 * an unknown release.
 */
export async function releasePlanInput(
  em: EntityManager,
  box: SecretBox,
  releaseId: string,
): Promise<PlanValidationInput | null> {
  const [row] = await em.execute<ReleasePlanRow[]>(
    `SELECT rl.id, rl.workspace_id, rl.deployment_id, rl.environment_id, rl.resource_id, rl.version_id,
            rl.phase, rl.created_at, r.name AS resource_name, e.name AS environment_name,
            s.current_release_id,
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug) AS deployment,
            json_build_object('id', r.id, 'name', r.name, 'identifier', r.identifier, 'kind', r.kind) AS resource,
            json_build_object('id', v.id, 'tag', v.tag, 'name', coalesce(v.name, v.tag)) AS version
       FROM release rl
       JOIN deployment d ON d.id = rl.deployment_id
       JOIN environment e ON e.id = rl.environment_id
       JOIN resource r ON r.id = rl.resource_id
       JOIN deployment_version v ON v.id = rl.version_id
       LEFT JOIN release_target_state s ON s.resource_id = rl.resource_id AND s.environment_id = rl.environment_id
                                       AND s.deployment_id = rl.deployment_id
      WHERE rl.id = ?`,
    [releaseId],
  );
  if (!row) return null;
  // Planned under the current release's id, so the release context differs only where the version does.
  const release = { ...row, id: row.current_release_id ?? row.id };
  const [target] = await planTargets(em, box, row.deployment_id, [row], [release]);
  return {
    deployment: row.deployment,
    environment: { id: row.environment_id, name: row.environment_name },
    resource: row.resource,
    version: row.version,
    hasChanges: target!.hasChanges,
    results: target!.results.map((result) => ({
      hasChanges: result.hasChanges,
      current: result.current,
      proposed: result.proposed,
      message: result.message,
    })),
  };
}
