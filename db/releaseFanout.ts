import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleaseIdentity } from '../domain/orchestration';
import type { PolicyRule } from '../domain/policies';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import { selectorContext, selectorMatches, type VersionFields } from '../domain/selectors';
import { newId } from './ids';
import { enabledPolicies, policiesForTarget, type MatchedPolicy, type TargetRecords } from './policyMatching';
import { openReleasesOfTargets } from './releaseWake';
import { uuidArray } from './sql';

/**
 * Creating releases (SPEC "Flow", steps 1–2): one per release target and version, never twice
 * (a unique constraint; re-running creates nothing). A version gets a release on a target only when
 * it can ever deploy there: the version selectors of the target's policies admit it, and the target
 * does not already run a newer version. Everything here is idempotent, so the activities that call
 * it may be retried after any crash.
 */

export type StartableRelease = ReleaseIdentity;

export interface FanoutResult {
  /** Open releases of the handled targets for the chosen versions: their workflows must run. */
  releases: StartableRelease[];
  /** Older open releases on the same targets: woken, they find themselves superseded. */
  superseded: string[];
  created: number;
}

interface VersionRow extends VersionFields {
  created_at: Timestamp;
  deployment_id: string;
}

interface TargetRow extends ReleaseTargetRef, TargetRecords {
  /** Creation time and id of the version deployed or deploying there, if any. */
  deployed_created_at: Timestamp | null;
  deployed_version_id: string | null;
}

const TARGET_SELECT = `
  SELECT t.resource_id AS "resourceId", t.environment_id AS "environmentId", t.deployment_id AS "deploymentId",
         json_build_object('kind', r.kind, 'version', r.version, 'name', r.name, 'identifier', r.identifier,
                           'metadata', r.metadata, 'config', r.config) AS resource,
         json_build_object('id', e.id, 'name', e.name, 'metadata', e.metadata) AS environment,
         json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
         dv.created_at AS deployed_created_at, dv.id AS deployed_version_id
    FROM release_target t
    JOIN resource r ON r.id = t.resource_id
    JOIN environment e ON e.id = t.environment_id
    JOIN deployment d ON d.id = t.deployment_id
    LEFT JOIN release_target_state s
      ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id AND s.deployment_id = t.deployment_id
    LEFT JOIN release cr ON cr.id = coalesce(s.active_release_id, s.current_release_id)
    LEFT JOIN deployment_version dv ON dv.id = cr.version_id`;

/** Raw queries return timestamps as ISO strings. */
type Timestamp = Date | string;

function newerThan(
  a: { created_at: Timestamp; id: string },
  b: { created_at: Timestamp; id: string },
): boolean {
  const byTime = new Date(a.created_at).getTime() - new Date(b.created_at).getTime();
  return byTime > 0 || (byTime === 0 && a.id > b.id);
}

/** Whether a version can ever deploy on a target: admitted by its version selectors, not older than what runs there. */
function eligible(version: VersionRow, target: TargetRow, policies: MatchedPolicy[]): boolean {
  if (
    target.deployed_created_at &&
    target.deployed_version_id !== version.id &&
    newerThan({ created_at: target.deployed_created_at, id: target.deployed_version_id! }, version)
  ) {
    return false;
  }
  const versionRules = policies
    .flatMap((policy) => policy.rules)
    .flatMap((rule: PolicyRule) => (rule.versionSelector ? [rule.versionSelector] : []));
  return versionRules.every((rule) =>
    selectorMatches('versionRule', rule.selector, {
      version: selectorContext.version(version),
      resource: target.resource,
      deployment: target.deployment,
      environment: target.environment,
    }),
  );
}

async function createReleases(
  em: EntityManager,
  workspaceId: string,
  choices: { target: ReleaseTargetRef; versionId: string }[],
): Promise<FanoutResult> {
  if (choices.length === 0) return { releases: [], superseded: [], created: 0 };
  const column = (pick: (choice: (typeof choices)[number]) => string) => uuidArray(choices.map(pick));
  const ids = choices.map(() => newId());
  const created = await em.execute<{ id: string }[]>(
    `INSERT INTO release (id, workspace_id, resource_id, environment_id, deployment_id, version_id)
     SELECT id, ?::uuid, resource_id, environment_id, deployment_id, version_id
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[]) AS c(id, resource_id, environment_id, deployment_id, version_id)
     ON CONFLICT (resource_id, environment_id, deployment_id, version_id) DO NOTHING
     RETURNING id`,
    [
      workspaceId,
      uuidArray(ids),
      column((c) => c.target.resourceId),
      column((c) => c.target.environmentId),
      column((c) => c.target.deploymentId),
      column((c) => c.versionId),
    ],
  );
  const releases = await em.execute<StartableRelease[]>(
    `SELECT r.id, r.workspace_id AS "workspaceId", r.deployment_id AS "deploymentId", r.environment_id AS "environmentId",
            r.resource_id AS "resourceId", r.version_id AS "versionId"
       FROM release r
       JOIN unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[]) AS c(resource_id, environment_id, deployment_id, version_id)
         ON r.resource_id = c.resource_id AND r.environment_id = c.environment_id
        AND r.deployment_id = c.deployment_id AND r.version_id = c.version_id
      WHERE r.phase IN ('pending', 'running')`,
    [
      column((c) => c.target.resourceId),
      column((c) => c.target.environmentId),
      column((c) => c.target.deploymentId),
      column((c) => c.versionId),
    ],
  );
  const chosen = new Set(releases.map((release) => release.id));
  const open = await openReleasesOfTargets(
    em,
    choices.map((c) => c.target),
  );
  return { releases, superseded: open.filter((id) => !chosen.has(id)), created: created.length };
}

/**
 * One batch of a version's rollout: the next `size` release targets of its deployment after
 * `after` (a `resourceId/environmentId` cursor). `next` is absent when the rollout is complete.
 */
export async function rollOutVersionBatch(
  em: EntityManager,
  versionId: string,
  after: string | undefined,
  size: number,
): Promise<FanoutResult & { next?: string }> {
  const [version] = await em.execute<(VersionRow & { workspace_id: string })[]>(
    `SELECT id, tag, name, status, metadata, config, created_at, deployment_id, workspace_id FROM deployment_version WHERE id = ?`,
    [versionId],
  );
  if (!version || version.status !== 'ready') return { releases: [], superseded: [], created: 0 };
  const [afterResource, afterEnvironment] = after ? after.split('/') : [];
  const targets = await em.execute<TargetRow[]>(
    `${TARGET_SELECT}
      WHERE t.deployment_id = ? ${after ? 'AND (t.resource_id, t.environment_id) > (?::uuid, ?::uuid)' : ''}
      ORDER BY t.resource_id, t.environment_id
      LIMIT ?`,
    after ? [version.deployment_id, afterResource, afterEnvironment, size] : [version.deployment_id, size],
  );
  const policies = await enabledPolicies(em, version.workspace_id);
  const choices = targets
    .filter((target) => eligible(version, target, policiesForTarget(policies, target)))
    .map((target) => ({ target, versionId }));
  const result = await createReleases(em, version.workspace_id, choices);
  const last = targets[targets.length - 1];
  return targets.length === size && last
    ? { ...result, next: `${last.resourceId}/${last.environmentId}` }
    : result;
}

/** New release targets: each gets a release of the newest version that can deploy there, if any. */
export async function rollOutTargets(
  em: EntityManager,
  workspaceId: string,
  refs: ReleaseTargetRef[],
): Promise<FanoutResult> {
  if (refs.length === 0) return { releases: [], superseded: [], created: 0 };
  const targets = await em.execute<TargetRow[]>(
    `${TARGET_SELECT}
       JOIN unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS wanted(resource_id, environment_id, deployment_id)
         ON wanted.resource_id = t.resource_id AND wanted.environment_id = t.environment_id
        AND wanted.deployment_id = t.deployment_id`,
    [
      uuidArray(refs.map((t) => t.resourceId)),
      uuidArray(refs.map((t) => t.environmentId)),
      uuidArray(refs.map((t) => t.deploymentId)),
    ],
  );
  const deploymentIds = [...new Set(targets.map((t) => t.deploymentId))];
  const versions = await em.execute<VersionRow[]>(
    `SELECT id, tag, name, status, metadata, config, created_at, deployment_id FROM deployment_version
      WHERE deployment_id = ANY(?::uuid[]) AND status = 'ready' ORDER BY created_at DESC, id DESC`,
    [uuidArray(deploymentIds)],
  );
  const policies = await enabledPolicies(em, workspaceId);
  const choices = targets.flatMap((target) => {
    const matched = policiesForTarget(policies, target);
    const version = versions.find(
      (v) => v.deployment_id === target.deploymentId && eligible(v, target, matched),
    );
    return version ? [{ target, versionId: version.id }] : [];
  });
  return createReleases(em, workspaceId, choices);
}
