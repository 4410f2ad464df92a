import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../domain/errors';
import {
  explainTarget,
  type Explanation,
  type SlotJob,
  type TargetSelectorWarning,
  type TargetSlot,
} from '../../domain/explain';
import { policySelectors, type PolicyRule } from '../../domain/policies';
import type { HeldSelector } from '../../domain/selectors';
import type { ReleasePhase } from '../../domain/releases';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import { loadVersionOnTarget } from '../eligibility/releaseFacts';
import { withRecordedPlanVerdicts } from '../planner/releasePlan';
import { withShipDigest } from '../planner/shipDigests';
import { targetVersion } from '../eligibility/targetVersion';
import type { SecretBox } from '../../db/secrets';
import { selectorWarnings } from '../selectors/selectorOverruns';

/**
 * Explains a release target for a version (by default the deployment's newest ready one): the
 * target's slot and its slow selectors, the version's release there (or a would-be release) and
 * its facts, all read first, then judged by the gates' own code (domain/explain.ts). It runs no
 * policy engine: plan validation rules show the verdicts the release's evaluation recorded.
 */
export async function explainReleaseTarget(
  em: EntityManager,
  secrets: SecretBox,
  workspaceId: string,
  target: ReleaseTargetRef,
  versionId?: string,
): Promise<Explanation> {
  const slot = await targetSlot(em, target);
  const selectorWarnings = await targetSelectorWarnings(em, workspaceId, target);
  const version = await targetVersion(em, workspaceId, target, versionId);
  const [existing] = await em.execute<{ id: string; phase: ReleasePhase }[]>(
    `SELECT id, phase FROM release
      WHERE resource_id = ? AND environment_id = ? AND deployment_id = ? AND version_id = ?`,
    [target.resourceId, target.environmentId, target.deploymentId, version.id],
  );
  const [lastJob] = existing
    ? await em.execute<{ id: string; status: string; message: string | null }[]>(
        `SELECT id, status, message FROM job WHERE release_id = ? ORDER BY attempt DESC, created_at DESC LIMIT 1`,
        [existing.id],
      )
    : [];
  const loaded = await loadVersionOnTarget(em, workspaceId, target, version.id, existing?.id);
  if (!loaded) throw new NotFoundError('version', version.id);
  // Plan validation as the release's evaluation recorded it on the plan; a would-be release has none.
  const judged =
    existing && loaded.phase === 'pending'
      ? await withRecordedPlanVerdicts(em, secrets, await withShipDigest(em, secrets, loaded))
      : loaded;
  return explainTarget({
    facts: judged.facts,
    release: existing ? { id: existing.id, phase: existing.phase } : null,
    slot,
    now: new Date(),
    ...(lastJob ? { lastJob } : {}),
    selectorWarnings,
  });
}

/**
 * The selectors that decide the target (its environment's, its deployment's, and every enabled
 * policy's, since a policy whose selector was stopped did not match) that turned out slow.
 */
async function targetSelectorWarnings(
  em: EntityManager,
  workspaceId: string,
  target: ReleaseTargetRef,
): Promise<TargetSelectorWarning[]> {
  const records = await em.execute<
    { kind: 'environment' | 'deployment' | 'policy'; id: string; name: string; selectors: HeldSelector[] }[]
  >(
    `SELECT 'environment' AS kind, id, name,
            json_build_array(json_build_object('path', 'resourceSelector', 'scope', 'resource', 'expression', resource_selector)) AS selectors
       FROM environment WHERE id = ? AND workspace_id = ?
     UNION ALL
     SELECT 'deployment', id, name,
            json_build_array(json_build_object('path', 'resourceSelector', 'scope', 'resource', 'expression', resource_selector),
                             json_build_object('path', 'jobAgentSelector', 'scope', 'jobAgent', 'expression', job_agent_selector))
       FROM deployment WHERE id = ? AND workspace_id = ?
     UNION ALL
     SELECT 'policy', id, name, json_build_array(json_build_object('selector', selector, 'rules', rules))
       FROM policy WHERE workspace_id = ? AND enabled`,
    [target.environmentId, workspaceId, target.deploymentId, workspaceId, workspaceId],
  );
  const held = records.map((record) =>
    record.kind === 'policy'
      ? policySelectors(record.selectors[0] as unknown as { selector: string; rules: PolicyRule[] })
      : record.selectors,
  );
  const warnings = await selectorWarnings(em, held);
  return records.flatMap((record, index) =>
    warnings[index]!.map((warning) => ({
      record: { type: record.kind, id: record.id, name: record.name },
      ...warning,
    })),
  );
}

async function targetSlot(em: EntityManager, target: ReleaseTargetRef): Promise<TargetSlot> {
  const [state] = await em.execute<
    {
      active_id: string | null;
      active_tag: string | null;
      active_phase: ReleasePhase | null;
      current_id: string | null;
      current_tag: string | null;
    }[]
  >(
    `SELECT a.id AS active_id, av.tag AS active_tag, a.phase AS active_phase,
            c.id AS current_id, cv.tag AS current_tag
       FROM release_target_state s
       LEFT JOIN release a ON a.id = s.active_release_id
       LEFT JOIN deployment_version av ON av.id = a.version_id
       LEFT JOIN release c ON c.id = s.current_release_id
       LEFT JOIN deployment_version cv ON cv.id = c.version_id
      WHERE s.resource_id = ? AND s.environment_id = ? AND s.deployment_id = ?`,
    [target.resourceId, target.environmentId, target.deploymentId],
  );
  const activeJobs = state?.active_id
    ? await em.execute<SlotJob[]>(
        `SELECT j.id, j.status,
                CASE WHEN a.id IS NOT NULL THEN json_build_object('id', a.id, 'name', a.name, 'type', a.type) END AS agent,
                to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
                to_char(j.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "startedAt"
           FROM job j LEFT JOIN job_agent a ON a.id = j.job_agent_id
          WHERE j.release_id = ? AND j.completed_at IS NULL
          ORDER BY j.created_at, j.id`,
        [state.active_id],
      )
    : [];
  return {
    activeRelease:
      state?.active_id && state.active_tag && state.active_phase
        ? { id: state.active_id, versionTag: state.active_tag, phase: state.active_phase }
        : null,
    activeJobs,
    currentRelease:
      state?.current_id && state.current_tag ? { id: state.current_id, versionTag: state.current_tag } : null,
  };
}
