import type { EntityManager } from '@mikro-orm/postgresql';
import type { LoadedRelease } from '../../domain/activityResults';
import type { ReleaseFacts } from '../../domain/gates';
import type { ReleaseIdentityRow } from '../../domain/orchestration';
import type { ReleasePhase } from '../../domain/releases';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import { uuidArray } from '../../db/sql';
import { loadFactFamilies, type LoadedField } from './facts';
import { iso } from './facts/factLoader';
import {
  policiesForTarget,
  policiesOfTargets,
  TARGET_RECORD_COLUMNS,
  TARGET_RECORD_JOINS,
  type MatchedPolicy,
} from './policyMatching';
import { DEPLOYED_VERSION_JOIN, VERSION_JSON } from './versionColumns';

/**
 * A release's facts (domain/gates.ts `ReleaseFacts`), read set-based for batches of releases: each
 * release's own row, the policies that apply to its target, then every family of facts the rules
 * read (engine/eligibility/facts/), each a statement or two for the whole batch.
 */

interface ReleaseRow extends ReleaseIdentityRow {
  phase: ReleasePhase;
  version_created_by: string | null;
  version_changed_by: string[];
  redeploy_requested_at: Date | null;
  redeploy_override_reason: string | null;
  created_at: Date;
  version: ReleaseFacts['version'];
  deployment: ReleaseFacts['deployment'];
  environment: ReleaseFacts['environment'];
  resource: ReleaseFacts['resource'];
  target_exists: boolean;
  active_release_id: string | null;
  deployed_version_id: string | null;
  deployed_created_at: Date | null;
  last_attempt: number;
}

export async function loadRelease(em: EntityManager, releaseId: string): Promise<LoadedRelease | null> {
  return (await loadReleases(em, [releaseId])).get(releaseId) ?? null;
}

/** The columns of a facts row, from a release's target records (`v` the version, `s` the target state). */
const FACT_COLUMNS = `
            ${VERSION_JSON('v')} AS version,
${TARGET_RECORD_COLUMNS},
            s.active_release_id, dv.id AS deployed_version_id, dv.created_at AS deployed_created_at,
            v.created_by_id AS version_created_by, v.changed_by_ids AS version_changed_by`;

/** The facts of many releases, keyed by release id; unknown ids are absent. */
export async function loadReleases(
  em: EntityManager,
  releaseIds: readonly string[],
): Promise<Map<string, LoadedRelease>> {
  if (releaseIds.length === 0) return new Map();
  return loadFacts(em, await releaseRows(em, releaseIds));
}

/**
 * The facts of a version on a target: its release's there (`releaseId`), or, without one, those a
 * release of it would have. Absent for an unknown release, target or version.
 */
export async function loadVersionOnTarget(
  em: EntityManager,
  workspaceId: string,
  target: ReleaseTargetRef,
  versionId: string,
  releaseId: string | undefined,
): Promise<LoadedRelease | undefined> {
  const rows = releaseId
    ? await releaseRows(em, [releaseId])
    : await wouldBeRows(em, workspaceId, target, versionId);
  return (await loadFacts(em, rows)).get(releaseId ?? versionId);
}

/** The facts rows of releases. */
function releaseRows(em: EntityManager, releaseIds: readonly string[]): Promise<ReleaseRow[]> {
  return em.execute<ReleaseRow[]>(
    `SELECT rl.id, rl.workspace_id, rl.deployment_id, rl.environment_id, rl.resource_id, rl.version_id, rl.phase,
            rl.redeploy_requested_at, rl.redeploy_override_reason, rl.created_at, ${FACT_COLUMNS},
            -- Scalar, so probed per row: an EXISTS may be planned as a hash of every release target.
            coalesce((SELECT true FROM release_target t WHERE t.resource_id = rl.resource_id
                        AND t.environment_id = rl.environment_id AND t.deployment_id = rl.deployment_id), false)
              AS target_exists,
            (SELECT coalesce(max(attempt), 0)::int FROM job WHERE release_id = rl.id) AS last_attempt
       FROM release rl
       JOIN deployment_version v ON v.id = rl.version_id
       ${TARGET_RECORD_JOINS('rl')}
       LEFT JOIN release_target_state s
         ON s.resource_id = rl.resource_id AND s.environment_id = rl.environment_id AND s.deployment_id = rl.deployment_id
       ${DEPLOYED_VERSION_JOIN('s', 'dv')}
      WHERE rl.id = ANY(?::uuid[])`,
    [uuidArray(releaseIds)],
  );
}

/**
 * The facts a release of each ready version of the target's deployment would have there now,
 * keyed by version id (that is also each one's release id in the facts): what the gates of such a
 * release would see, for the versions eligible on a target. Empty for an unknown target.
 */
export async function loadTargetVersionFacts(
  em: EntityManager,
  workspaceId: string,
  target: ReleaseTargetRef,
): Promise<Map<string, LoadedRelease>> {
  return loadFacts(em, await wouldBeRows(em, workspaceId, target));
}

/**
 * The facts rows of would-be releases on the target, with their version's id as theirs: of each
 * ready version of its deployment, or of `versionId` only, whatever its status.
 */
function wouldBeRows(
  em: EntityManager,
  workspaceId: string,
  target: ReleaseTargetRef,
  versionId?: string,
): Promise<ReleaseRow[]> {
  return em.execute<ReleaseRow[]>(
    `SELECT v.id, t.workspace_id, t.deployment_id, t.environment_id, t.resource_id, v.id AS version_id,
            'pending' AS phase, NULL AS redeploy_requested_at, NULL AS redeploy_override_reason, now() AS created_at,
            ${FACT_COLUMNS}, true AS target_exists, 0 AS last_attempt
       FROM release_target t
       JOIN deployment_version v ON v.deployment_id = t.deployment_id
                                 AND (v.id = ?::uuid OR (?::uuid IS NULL AND v.status = 'ready'))
       ${TARGET_RECORD_JOINS('t')}
       LEFT JOIN release_target_state s
         ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id AND s.deployment_id = t.deployment_id
       ${DEPLOYED_VERSION_JOIN('s', 'dv')}
      WHERE t.workspace_id = ? AND t.resource_id = ? AND t.environment_id = ? AND t.deployment_id = ?`,
    [
      versionId ?? null,
      versionId ?? null,
      workspaceId,
      target.resourceId,
      target.environmentId,
      target.deploymentId,
    ],
  );
}

/**
 * The facts a release of each deployment's newest ready version would have on each of the
 * workspace's release targets under `policy` alone (a policy not saved: a dry run), keyed by the
 * would-be release's id, with its target. Targets whose deployment has no ready version are left out.
 */
export async function loadDryRunFacts(
  em: EntityManager,
  workspaceId: string,
  policy: MatchedPolicy & { selector: string },
  targetLimit: number,
): Promise<{ facts: Map<string, LoadedRelease>; targets: Map<string, ReleaseTargetRef>; matched: number }> {
  const all = await em.execute<ReleaseRow[]>(
    `SELECT gen_random_uuid() AS id, t.workspace_id, t.deployment_id, t.environment_id, t.resource_id,
            v.id AS version_id, 'pending' AS phase, NULL AS redeploy_requested_at, NULL AS redeploy_override_reason,
            now() AS created_at, ${FACT_COLUMNS}, true AS target_exists, 0 AS last_attempt
       FROM release_target t
       JOIN LATERAL (SELECT * FROM deployment_version x WHERE x.deployment_id = t.deployment_id AND x.status = 'ready'
                      ORDER BY x.created_at DESC, x.id DESC LIMIT 1) v ON true
       ${TARGET_RECORD_JOINS('t')}
       LEFT JOIN release_target_state s
         ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id AND s.deployment_id = t.deployment_id
       ${DEPLOYED_VERSION_JOIN('s', 'dv')}
      WHERE t.workspace_id = ?
      ORDER BY t.resource_id, t.environment_id, t.deployment_id`,
    [workspaceId],
  );
  const rows = all.filter((row) => policiesForTarget([policy], row).length > 0);
  const kept = rows.slice(0, targetLimit);
  return {
    facts: await loadFacts(em, kept, [policy]),
    targets: new Map(
      kept.map((row) => [
        row.id,
        { resourceId: row.resource_id, environmentId: row.environment_id, deploymentId: row.deployment_id },
      ]),
    ),
    matched: rows.length,
  };
}

/**
 * Everything else the gates read, for rows of the release table or of would-be releases; under the
 * workspace's enabled policies, or under `policies` instead (a dry run).
 */
async function loadFacts(
  em: EntityManager,
  rows: ReleaseRow[],
  policies?: (MatchedPolicy & { selector: string })[],
): Promise<Map<string, LoadedRelease>> {
  if (rows.length === 0) return new Map();
  const releases = rows.map(releaseFromRow);
  const policiesOf = await policiesOfTargets(em, rows, policies);
  const families = await loadFactFamilies(
    em,
    rows.map((row) => ({ ...row, rules: policiesOf.get(row.id)!.flatMap((policy) => policy.rules) })),
  );
  return new Map(
    releases.map(({ facts, ...release }) => [
      release.releaseId,
      {
        ...release,
        facts: {
          ...facts,
          policies: policiesOf.get(release.releaseId)!.map(({ id, name, rules }) => ({ id, name, rules })),
          ...families.get(release.releaseId)!,
        },
      },
    ]),
  );
}

/** A release as its own row tells it: all but its policies and the families of facts the loaders read. */
function releaseFromRow(
  row: ReleaseRow,
): Omit<LoadedRelease, 'facts'> & { facts: Omit<ReleaseFacts, LoadedField | 'policies'> } {
  return {
    releaseId: row.id,
    workspaceId: row.workspace_id,
    phase: row.phase,
    redeployRequested: row.redeploy_requested_at !== null,
    redeployOverridesPolicies: row.redeploy_override_reason !== null,
    lastAttempt: row.last_attempt,
    target: {
      resourceId: row.resource_id,
      environmentId: row.environment_id,
      deploymentId: row.deployment_id,
    },
    facts: {
      release: { id: row.id, environmentId: row.environment_id, createdAt: iso(row.created_at) },
      version: { ...row.version, createdAt: iso(row.version.createdAt) },
      deployment: row.deployment,
      environment: row.environment,
      resource: row.resource,
      targetExists: row.target_exists,
      activeReleaseId: row.active_release_id,
      deployedVersionId: row.deployed_version_id,
      deployedVersionCreatedAt: row.deployed_created_at ? iso(row.deployed_created_at) : null,
      ...(row.version_created_by ? { versionCreatedBy: row.version_created_by } : {}),
      ...(row.version_changed_by.length > 0
        ? {
            versionAuthors: [
              ...(row.version_created_by ? [row.version_created_by] : []),
              ...row.version_changed_by,
            ],
          }
        : {}),
    },
  };
}
