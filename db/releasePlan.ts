import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanValidationInput, PlanVerdict, RegoEngine } from '../domain/planValidation';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import { newId } from './ids';
import type { ReleaseRow } from './jobCreation';
import type { LoadedRelease } from './releaseFacts';
import type { SecretBox } from './secrets';
import { planTargets, type PlanTargetRow } from './targetPlans';

interface PlanRow extends ReleaseRow, PlanTargetRow {
  deployment: PlanValidationInput['deployment'];
  resource: PlanValidationInput['resource'];
  version: PlanValidationInput['version'];
}

/**
 * What a `planValidationOpa` rule sees of a release of `versionId` on `target` (domain/
 * planValidation.ts): the target and version, and the jobs' rendered inputs against those of the
 * release running there now. Null when the target or version is unknown.
 */
export async function planValidationInput(
  em: EntityManager,
  box: SecretBox,
  target: ReleaseTargetRef,
  versionId: string,
  /** The release's own id, when it exists (its jobs' release context names it). */
  releaseId?: string,
): Promise<PlanValidationInput | null> {
  const [row] = await em.execute<PlanRow[]>(
    `SELECT t.workspace_id, t.deployment_id, t.environment_id, t.resource_id, v.id AS version_id,
            'pending' AS phase, now() AS created_at, r.name AS resource_name, e.name AS environment_name,
            s.current_release_id,
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug) AS deployment,
            json_build_object('id', r.id, 'name', r.name, 'identifier', r.identifier, 'kind', r.kind) AS resource,
            json_build_object('id', v.id, 'tag', v.tag, 'name', coalesce(v.name, v.tag)) AS version
       FROM release_target t
       JOIN deployment d ON d.id = t.deployment_id
       JOIN environment e ON e.id = t.environment_id
       JOIN resource r ON r.id = t.resource_id
       JOIN deployment_version v ON v.id = ? AND v.deployment_id = t.deployment_id
       LEFT JOIN release_target_state s ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id
                                       AND s.deployment_id = t.deployment_id
      WHERE t.resource_id = ? AND t.environment_id = ? AND t.deployment_id = ?`,
    [versionId, target.resourceId, target.environmentId, target.deploymentId],
  );
  if (!row) return null;
  // Planned under the current release's id, so the release context differs only where the version does.
  const release = { ...row, id: row.current_release_id ?? releaseId ?? newId() };
  const [planned] = await planTargets(em, box, row.deployment_id, [row], [release]);
  return {
    deployment: row.deployment,
    environment: { id: row.environment_id, name: row.environment_name },
    resource: row.resource,
    version: row.version,
    hasChanges: planned!.hasChanges,
    results: planned!.results.map((result) => ({
      hasChanges: result.hasChanges,
      current: result.current,
      proposed: result.proposed,
      message: result.message,
    })),
  };
}

/**
 * A release's facts (real or would-be) with each `planValidationOpa` rule's verdict on its plan:
 * what the release workflow evaluates, and what an explanation shows. Facts without such a rule are
 * returned as they are; an engine that fails gives the rule an error verdict (the gate waits).
 */
export async function withPlanValidation(
  em: EntityManager,
  box: SecretBox,
  rego: RegoEngine,
  loaded: LoadedRelease,
  /** Whether `loaded` is a stored release (not a would-be one keyed by its version). */
  stored: boolean,
): Promise<LoadedRelease> {
  const rules = loaded.facts.policies.flatMap((policy) =>
    policy.rules.flatMap((rule) =>
      rule.planValidationOpa ? [{ id: rule.id, ...rule.planValidationOpa }] : [],
    ),
  );
  if (rules.length === 0 || !loaded.target) return loaded;
  const input = await planValidationInput(
    em,
    box,
    loaded.target,
    loaded.facts.version.id,
    stored ? loaded.releaseId : undefined,
  );
  const planValidation: Record<string, PlanVerdict> = {};
  for (const rule of rules) {
    try {
      planValidation[rule.id] = { denials: await rego.deny(rule.rego, input) };
    } catch (error) {
      planValidation[rule.id] = { error: (error as Error).message };
    }
  }
  return { ...loaded, facts: { ...loaded.facts, planValidation } };
}
