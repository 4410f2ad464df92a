import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanValidationInput } from '../../domain/planValidation';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import { newId } from '../../db/ids';
import type { ReleaseRow } from './releaseRows';
import type { LoadedRelease } from '../../domain/activityResults';
import { planDigest, recordedPlanVerdicts } from './planVerdicts';
import type { SecretBox } from '../../db/secrets';
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

/** The `planValidationOpa` rules among the facts' policies, with the plan they judge; none without a rule. */
export async function planRules(
  em: EntityManager,
  box: SecretBox,
  loaded: LoadedRelease,
): Promise<{ input: PlanValidationInput | null; rules: { id: string; rego: string; digest: string }[] }> {
  const rules = loaded.facts.policies.flatMap((policy) =>
    policy.rules.flatMap((rule) =>
      rule.planValidationOpa ? [{ id: rule.id, ...rule.planValidationOpa }] : [],
    ),
  );
  if (rules.length === 0 || !loaded.target) return { input: null, rules: [] };
  const input = await planValidationInput(em, box, loaded.target, loaded.facts.version.id, loaded.releaseId);
  return {
    input,
    rules: rules.map((rule) => ({ id: rule.id, rego: rule.rego, digest: planDigest(rule.rego, input) })),
  };
}

/**
 * A stored release's facts with the verdicts its evaluation recorded on its plan as it is now,
 * without running the engine: a rule without one shows as pending (domain/rules/planValidationOpa.ts).
 */
export async function withRecordedPlanVerdicts(
  em: EntityManager,
  box: SecretBox,
  loaded: LoadedRelease,
): Promise<LoadedRelease> {
  const { rules } = await planRules(em, box, loaded);
  if (rules.length === 0) return loaded;
  const planValidation = await recordedPlanVerdicts(
    em,
    loaded.releaseId,
    rules.map((rule) => ({ ruleId: rule.id, digest: rule.digest })),
  );
  return { ...loaded, facts: { ...loaded.facts, planValidation } };
}
