import type { EntityManager } from '@mikro-orm/postgresql';
import { resolveTargetVariables } from '../../domain/jobPlan';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import { REDACTED } from '../../domain/sensitive';
import type { ResolvedVariable } from '../../domain/variables';
import { newId } from '../../db/ids';
import { loadPlanInputs } from './planInputs';
import type { SecretBox } from '../../db/secrets';
import { jobSecrets, openTree } from '../../db/sensitiveValues';
import { targetVersion } from '../eligibility/targetVersion';

export type VariableChange = 'added' | 'removed' | 'changed' | 'unchanged';

export interface VariablePreview {
  version: { id: string; tag: string };
  /** Each resolved variable, its value masked when sensitive, with the source that won. */
  variables: (Omit<ResolvedVariable, 'value'> & { value: unknown })[];
  /** Against the variables of the target's running (current) release; empty when it has none. */
  changes: { key: string; change: VariableChange }[];
  currentReleaseId: string | null;
}

/**
 * The variables a release of a version (by default the newest ready one) would get on the target,
 * resolved as job creation resolves them, and how they differ from the running release's. Secrets
 * are compared in clear and shown masked.
 */
export async function previewTargetVariables(
  em: EntityManager,
  box: SecretBox,
  workspaceId: string,
  target: ReleaseTargetRef,
  versionId?: string,
): Promise<VariablePreview> {
  const version = await targetVersion(em, workspaceId, target, versionId);
  const [state] = await em.execute<
    { current_release_id: string | null; variables: Record<string, unknown> | null }[]
  >(
    `SELECT s.current_release_id,
            (SELECT j.dispatch_context->'variables' FROM job j WHERE j.release_id = s.current_release_id
              ORDER BY j.attempt DESC, j.created_at DESC LIMIT 1) AS variables
       FROM release_target_state s
      WHERE s.resource_id = ? AND s.environment_id = ? AND s.deployment_id = ?`,
    [target.resourceId, target.environmentId, target.deploymentId],
  );
  const currentReleaseId = state?.current_release_id ?? null;
  const release = {
    id: currentReleaseId ?? newId(),
    workspace_id: workspaceId,
    deployment_id: target.deploymentId,
    environment_id: target.environmentId,
    resource_id: target.resourceId,
    version_id: version.id,
    phase: 'pending' as const,
    created_at: new Date().toISOString(),
  };
  const inputs = await loadPlanInputs(em, box, [release]);
  const resolved = resolveTargetVariables(inputs.get(release.id)!);
  const current = currentReleaseId
    ? (openTree(
        jobSecrets(box, { workspaceId, releaseId: currentReleaseId }),
        state?.variables ?? {},
      ) as Record<string, unknown>)
    : undefined;
  const proposed = new Map(resolved.map((variable) => [variable.key, variable.value]));
  const keys = [...new Set([...proposed.keys(), ...Object.keys(current ?? {})])].sort();
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  return {
    version,
    variables: resolved.map((variable) => ({
      ...variable,
      value: variable.sensitive ? REDACTED : variable.value,
    })),
    changes: current
      ? keys.map((key) => ({
          key,
          change: !proposed.has(key)
            ? 'removed'
            : !(key in current)
              ? 'added'
              : same(proposed.get(key), current[key])
                ? 'unchanged'
                : 'changed',
        }))
      : [],
    currentReleaseId,
  };
}
