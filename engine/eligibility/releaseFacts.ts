import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleaseIdentityRow } from '../../domain/orchestration';
import { groupBy } from '../../domain/grouping';
import type {
  ApprovalFact,
  DependencyFact,
  ProgressionFact,
  ReleaseFacts,
  VersionFacts,
} from '../../domain/gates';
import type { EnvironmentProgressionRule } from '../../domain/policies';
import { RULE_DEFAULTS } from '../../domain/ruleDefaults';
import type { ReleasePhase } from '../../domain/releases';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import { selectorMatches, type DeploymentFields } from '../../domain/selectors';
import {
  enabledPolicies,
  policiesForTarget,
  TARGET_RECORD_COLUMNS,
  TARGET_RECORD_JOINS,
  type MatchedPolicy,
} from './policyMatching';
import { uuidArray } from '../../db/sql';
import { OPEN_RELEASES_OF } from '../../db/releaseWake';
import type { SkipFact } from '../../domain/policySkips';
import type { HoldFact } from '../../domain/holds';
import { holdsOnTarget, loadWorkspaceHolds } from './holdMatching';
import type { LoadedRelease } from '../../domain/activityResults';
import type { z } from 'zod';

interface ReleaseRow extends ReleaseIdentityRow {
  phase: ReleasePhase;
  version_created_by: string | null;
  version_changed_by: string[];
  redeploy_requested_at: Date | null;
  redeploy_override_reason: string | null;
  created_at: Date;
  version: VersionFacts;
  deployment: ReleaseFacts['deployment'];
  environment: ReleaseFacts['environment'];
  resource: ReleaseFacts['resource'];
  target_exists: boolean;
  active_release_id: string | null;
  deployed_version_id: string | null;
  deployed_created_at: Date | null;
  last_attempt: number;
}

/** SQL for a version's fields as the gates see them, from the `deployment_version` row `alias`. */
export const VERSION_JSON = (alias: string) =>
  `json_build_object('id', ${alias}.id, 'tag', ${alias}.tag, 'name', ${alias}.name, 'status', ${alias}.status,
     'metadata', ${alias}.metadata, 'config', ${alias}.config, 'createdAt', ${alias}.created_at)`;

/** SQL for the version deployed (or deploying) on the target whose `release_target_state` is `s`. */
export const DEPLOYED_VERSION_JOIN = (state: string, version: string) =>
  `LEFT JOIN release ${version}_release ON ${version}_release.id = coalesce(${state}.active_release_id, ${state}.current_release_id)
   LEFT JOIN deployment_version ${version} ON ${version}.id = ${version}_release.version_id`;

const iso = (value: Date | string | number) => new Date(value).toISOString();

/** `{[key]: values}` when there are any, nothing otherwise: a history records only facts that exist. */
const ifAny = <K extends string, T>(key: K, values: T[] | undefined) =>
  values && values.length > 0 ? ({ [key]: values } as Record<K, T[]>) : {};

type Progression = z.infer<typeof EnvironmentProgressionRule>;

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
  const rows = await em.execute<ReleaseRow[]>(
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
  return loadFacts(em, rows);
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
  /** One version only, whatever its status (an explanation asks about any version). */
  versionId?: string,
): Promise<Map<string, LoadedRelease>> {
  const rows = await em.execute<ReleaseRow[]>(
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
  return loadFacts(em, rows);
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

/** What the fact loaders need of the database: statements, nothing else. */
type SqlReader = Pick<EntityManager, 'execute'>;

/** One family of facts for a batch of rows, keyed by release id (a release without any is absent). */
type FactsByRelease<T> = Map<string, T>;

/**
 * Everything else the gates read, for rows of the release table or of would-be releases; under the
 * workspace's enabled policies, or under `policies` instead (a dry run). One loader per family of
 * facts, each a statement or two for the whole batch, and only for the rows whose rules read it.
 */
async function loadFacts(
  em: EntityManager,
  rows: ReleaseRow[],
  policies?: (MatchedPolicy & { selector: string })[],
): Promise<Map<string, LoadedRelease>> {
  if (rows.length === 0) return new Map();
  const policiesOf = await matchPolicies(em, rows, policies);
  const rulesOf = (row: ReleaseRow) => policiesOf.get(row.id)!.flatMap((policy) => policy.rules);
  const dependent = rows.filter((row) => rulesOf(row).some((rule) => rule.deploymentDependency));
  const families = {
    approvals: await loadApprovals(em, rows),
    skips: await loadSkips(em, rows),
    holds: await loadHolds(em, rows),
    newerReleases: await loadNewerReleases(em, rows),
    rollout: await loadRolloutPositions(
      em,
      rows.filter((row) => rulesOf(row).some((rule) => rule.gradualRollout)),
    ),
    versionDependencies: await loadVersionDependencies(em, rows),
    upstream: await loadUpstream(em, dependent),
    progression: await loadProgression(
      em,
      rows.flatMap((row) =>
        rulesOf(row).flatMap((rule) =>
          rule.environmentProgression ? [{ row, ruleId: rule.id, spec: rule.environmentProgression }] : [],
        ),
      ),
    ),
  };
  return new Map(
    rows.map((row) => [
      row.id,
      assembleRelease(row, policiesOf.get(row.id)!, families, dependent.includes(row)),
    ]),
  );
}

/** The policies that apply to each row's target: the workspace's enabled ones, or the dry run's. */
async function matchPolicies(
  em: EntityManager,
  rows: ReleaseRow[],
  policies?: (MatchedPolicy & { selector: string })[],
): Promise<Map<string, MatchedPolicy[]>> {
  const workspacePolicies = new Map<string, Awaited<ReturnType<typeof enabledPolicies>>>();
  for (const workspaceId of new Set(rows.map((row) => row.workspace_id))) {
    workspacePolicies.set(workspaceId, policies ?? (await enabledPolicies(em, workspaceId)));
  }
  return new Map(
    rows.map((row) => [row.id, policiesForTarget(workspacePolicies.get(row.workspace_id)!, row)]),
  );
}

/** Each row's version and environment, as two arrays for `unnest`. */
function versionEnvironmentPairs(rows: ReleaseRow[]): [string, string] {
  return [uuidArray(rows.map((row) => row.version_id)), uuidArray(rows.map((row) => row.environment_id))];
}

/**
 * Approvals and rejections of each row's version in its environment, oldest first. Whether each
 * covers what the release would ship is read after (engine/planner/shipDigests.ts `withShipDigest`).
 */
async function loadApprovals(sql: SqlReader, rows: ReleaseRow[]): Promise<FactsByRelease<ApprovalFact[]>> {
  const byRelease = groupBy(
    await sql.execute<(ApprovalFact & { of: string })[]>(
      `SELECT k.of, a.user_id AS "userId", a.user_name AS "userName", a.status, a.reason, a.updated_at AS at
         FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(of, version_id, environment_id)
         JOIN approval a ON a.version_id = k.version_id AND a.environment_id = k.environment_id
        ORDER BY a.updated_at`,
      [uuidArray(rows.map((row) => row.id)), ...versionEnvironmentPairs(rows)],
    ),
    (a) => a.of,
  );
  return new Map(
    rows.map((row) => [
      row.id,
      (byRelease.get(row.id) ?? []).map(({ userId, userName, status, reason, at }) => ({
        userId,
        userName,
        status,
        reason,
        at: iso(at),
      })),
    ]),
  );
}

/**
 * The unexpired policy skips of each row's version on its target: those scoped to its environment,
 * to its resource, or to neither (every target of the version).
 */
async function loadSkips(sql: SqlReader, rows: ReleaseRow[]): Promise<FactsByRelease<SkipFact[]>> {
  const skips = await sql.execute<
    (SkipFact & { version_id: string; environment_id: string | null; resource_id: string | null })[]
  >(
    `SELECT s.id, s.rule_id AS "ruleId", s.reason, s.expires_at AS "expiresAt", s.version_id, s.environment_id,
            s.resource_id, json_build_object('id', s.created_by_id, 'name', s.created_by_name) AS "createdBy"
       FROM policy_skip s WHERE s.version_id = ANY(?::uuid[]) AND s.expires_at > now()
      ORDER BY s.created_at, s.id`,
    [uuidArray([...new Set(rows.map((row) => row.version_id))])],
  );
  const byVersion = groupBy(skips, (skip) => skip.version_id);
  return new Map(
    rows.map((row) => [
      row.id,
      (byVersion.get(row.version_id) ?? [])
        .filter(
          (skip) =>
            (skip.environment_id === null || skip.environment_id === row.environment_id) &&
            (skip.resource_id === null || skip.resource_id === row.resource_id),
        )
        .map(({ id, ruleId, reason, expiresAt, createdBy }) => ({
          id,
          ruleId,
          reason,
          expiresAt: iso(expiresAt),
          createdBy,
        })),
    ]),
  );
}

/** The unexpired holds of each row's workspace whose selector matches its target. */
async function loadHolds(sql: SqlReader, rows: ReleaseRow[]): Promise<FactsByRelease<HoldFact[]>> {
  const holds = await loadWorkspaceHolds(sql, [...new Set(rows.map((row) => row.workspace_id))]);
  if (holds.length === 0) return new Map();
  return new Map(rows.map((row) => [row.id, holdsOnTarget(holds, row)]));
}

/** The open releases of each row's target with a newer version (for supersession). */
async function loadNewerReleases(
  sql: SqlReader,
  rows: ReleaseRow[],
): Promise<FactsByRelease<ReleaseFacts['newerReleases']>> {
  const newer = groupBy(
    await sql.execute<(ReleaseFacts['newerReleases'][number] & { of: string })[]>(
      `SELECT me.id AS of, o.id, ${VERSION_JSON('ov')} AS version,
              EXISTS (SELECT 1 FROM approval a WHERE a.version_id = o.version_id AND a.environment_id = o.environment_id
                        AND a.status = 'rejected') AS rejected
         FROM release me
         JOIN deployment_version mv ON mv.id = me.version_id
        CROSS JOIN LATERAL (${OPEN_RELEASES_OF('me')}) o
         JOIN deployment_version ov ON ov.id = o.version_id
        WHERE me.id = ANY(?::uuid[]) AND (ov.created_at, ov.id) > (mv.created_at, mv.id)`,
      [uuidArray(rows.map((row) => row.id))],
    ),
    (n) => n.of,
  );
  return new Map(
    [...newer].map(([of, releases]) => [
      of,
      releases.map(({ id, version, rejected }) => ({
        id,
        rejected,
        version: { ...version, createdAt: iso(version.createdAt) },
      })),
    ]),
  );
}

/**
 * A target's place in its version's rollout, for the rows under a gradual rollout only: it costs a
 * scan of the version's releases in the environment, once per version and environment.
 */
async function loadRolloutPositions(
  sql: SqlReader,
  gradual: ReleaseRow[],
): Promise<FactsByRelease<ReleaseFacts['rollout']>> {
  if (gradual.length === 0) return new Map();
  const positions = await sql.execute<{ id: string; position: number; total: number; started_at: Date }[]>(
    `SELECT id, position, total, started_at FROM (
       SELECT r.id, (row_number() OVER w - 1)::int AS position, (count(*) OVER p)::int AS total,
              min(r.created_at) OVER p AS started_at
         FROM release r JOIN (SELECT DISTINCT * FROM unnest(?::uuid[], ?::uuid[])) AS k(version_id, environment_id)
           ON r.version_id = k.version_id AND r.environment_id = k.environment_id
       WINDOW p AS (PARTITION BY r.version_id, r.environment_id),
              w AS (PARTITION BY r.version_id, r.environment_id ORDER BY r.created_at, r.id)) ranked
      WHERE id = ANY(?::uuid[])`,
    [...versionEnvironmentPairs(gradual), uuidArray(gradual.map((row) => row.id))],
  );
  return new Map(
    positions.map((p) => [p.id, { position: p.position, total: p.total, startedAt: iso(p.started_at) }]),
  );
}

/**
 * Each version dependency of each row's version, with the dependency's current version on the
 * row's resource: that of its most recent success there, in any environment.
 */
async function loadVersionDependencies(
  sql: SqlReader,
  rows: ReleaseRow[],
): Promise<FactsByRelease<DependencyFact[]>> {
  const dependencies = groupBy(
    await sql.execute<(DependencyFact & { of: string })[]>(
      `SELECT k.of, dep.dependency_deployment_id AS "deploymentId", dd.name AS "deploymentName",
              dep.version_selector AS "versionSelector",
              (SELECT ${VERSION_JSON('cv')}
                 FROM release_target_state cs
                 JOIN release cr ON cr.id = cs.current_release_id
                 JOIN deployment_version cv ON cv.id = cr.version_id
                WHERE cs.resource_id = k.resource_id AND cs.deployment_id = dep.dependency_deployment_id
                ORDER BY cr.completed_at DESC NULLS LAST, cr.id DESC LIMIT 1) AS "currentVersion"
         FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(of, version_id, resource_id)
         JOIN deployment_version_dependency dep ON dep.deployment_version_id = k.version_id
         JOIN deployment dd ON dd.id = dep.dependency_deployment_id
        ORDER BY dep.created_at, dep.dependency_deployment_id`,
      [
        uuidArray(rows.map((row) => row.id)),
        uuidArray(rows.map((row) => row.version_id)),
        uuidArray(rows.map((row) => row.resource_id)),
      ],
    ),
    (dependency) => dependency.of,
  );
  return new Map(
    [...dependencies].map(([of, found]) => [
      of,
      found.map(({ of: _of, currentVersion, ...dependency }) => ({
        ...dependency,
        currentVersion: currentVersion && { ...currentVersion, createdAt: iso(currentVersion.createdAt) },
      })),
    ]),
  );
}

/** Other deployments' current versions on each row's resource, for deploymentDependency rules only. */
async function loadUpstream(
  sql: SqlReader,
  dependent: ReleaseRow[],
): Promise<FactsByRelease<NonNullable<ReleaseFacts['upstream']>>> {
  if (dependent.length === 0) return new Map();
  const upstream = groupBy(
    await sql.execute<{ of: string; deployment: DeploymentFields; version: VersionFacts }[]>(
      `SELECT DISTINCT ON (k.of, cs.deployment_id) k.of,
              json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
              ${VERSION_JSON('cv')} AS version
         FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(of, resource_id, deployment_id)
         JOIN release_target_state cs ON cs.resource_id = k.resource_id AND cs.deployment_id <> k.deployment_id
         JOIN release cr ON cr.id = cs.current_release_id
         JOIN deployment_version cv ON cv.id = cr.version_id
         JOIN deployment d ON d.id = cs.deployment_id
        ORDER BY k.of, cs.deployment_id, cr.completed_at DESC NULLS LAST, cr.id DESC`,
      [
        uuidArray(dependent.map((row) => row.id)),
        uuidArray(dependent.map((row) => row.resource_id)),
        uuidArray(dependent.map((row) => row.deployment_id)),
      ],
    ),
    (entry) => entry.of,
  );
  return new Map(
    [...upstream].map(([of, entries]) => [
      of,
      entries.map(({ deployment, version }) => ({
        deployment,
        version: { ...version, createdAt: iso(version.createdAt) },
      })),
    ]),
  );
}

/** One release's facts: its row, its policies and what each family loaded for it. */
function assembleRelease(
  row: ReleaseRow,
  policies: MatchedPolicy[],
  families: {
    approvals: FactsByRelease<ApprovalFact[]>;
    skips: FactsByRelease<SkipFact[]>;
    holds: FactsByRelease<HoldFact[]>;
    newerReleases: FactsByRelease<ReleaseFacts['newerReleases']>;
    rollout: FactsByRelease<ReleaseFacts['rollout']>;
    versionDependencies: FactsByRelease<DependencyFact[]>;
    upstream: FactsByRelease<NonNullable<ReleaseFacts['upstream']>>;
    progression: FactsByRelease<ProgressionFact[]>;
  },
  readsUpstream: boolean,
): LoadedRelease {
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
      policies: policies.map(({ id, name, rules }) => ({ id, name, rules })),
      approvals: families.approvals.get(row.id) ?? [],
      progression: families.progression.get(row.id) ?? [],
      activeReleaseId: row.active_release_id,
      deployedVersionId: row.deployed_version_id,
      deployedVersionCreatedAt: row.deployed_created_at ? iso(row.deployed_created_at) : null,
      newerReleases: families.newerReleases.get(row.id) ?? [],
      ...(readsUpstream ? { upstream: families.upstream.get(row.id) ?? [] } : {}),
      versionDependencies: families.versionDependencies.get(row.id) ?? [],
      rollout: families.rollout.get(row.id) ?? { position: 0, total: 1, startedAt: iso(row.created_at) },
      ...ifAny('skips', families.skips.get(row.id)),
      ...ifAny('holds', families.holds.get(row.id)),
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

/**
 * Progression facts of every (release, progression rule) asked: for each environment the rule
 * depends on, the deployment's target count there and the times this version succeeded there,
 * one success per resource, by the rule's success statuses.
 */
async function loadProgression(
  sql: SqlReader,
  wanted: { row: ReleaseRow; ruleId: string; spec: Progression }[],
): Promise<Map<string, ProgressionFact[]>> {
  const facts = new Map<string, ProgressionFact[]>();
  if (wanted.length === 0) return facts;
  const environments = groupBy(
    await sql.execute<{ id: string; name: string; metadata: Record<string, string>; workspace_id: string }[]>(
      `SELECT id, name, metadata, workspace_id FROM environment WHERE workspace_id = ANY(?::uuid[])`,
      [uuidArray([...new Set(wanted.map(({ row }) => row.workspace_id))])],
    ),
    (env) => env.workspace_id,
  );
  const dependencies = wanted.map(({ row, ruleId, spec }) => ({
    row,
    ruleId,
    spec,
    environments: (environments.get(row.workspace_id) ?? []).filter(
      (env) =>
        env.id !== row.environment_id &&
        selectorMatches('environment', spec.dependsOnEnvironmentSelector, { environment: env }),
    ),
  }));
  const pairs = (pick: (row: ReleaseRow) => string) =>
    uuidArray(dependencies.flatMap(({ row, environments: envs }) => envs.map(() => pick(row))));
  const dependedOn = uuidArray(dependencies.flatMap(({ environments: envs }) => envs.map((env) => env.id)));
  const targetCounts = new Map(
    (
      await sql.execute<{ deployment_id: string; environment_id: string; targets: number }[]>(
        `SELECT t.deployment_id, t.environment_id, count(*)::int AS targets
           FROM release_target t JOIN (SELECT DISTINCT * FROM unnest(?::uuid[], ?::uuid[])) AS k(deployment_id, environment_id)
             ON t.deployment_id = k.deployment_id AND t.environment_id = k.environment_id
          GROUP BY 1, 2`,
        [pairs((row) => row.deployment_id), dependedOn],
      )
    ).map((c) => [`${c.deployment_id}/${c.environment_id}`, c.targets]),
  );
  const completions = groupBy(
    await sql.execute<
      { version_id: string; environment_id: string; resource_id: string; status: string; at: Date }[]
    >(
      `SELECT r.version_id, r.environment_id, r.resource_id, j.status, min(j.completed_at) AS at
         FROM job j JOIN release r ON r.id = j.release_id
         JOIN (SELECT DISTINCT * FROM unnest(?::uuid[], ?::uuid[])) AS k(version_id, environment_id)
           ON r.version_id = k.version_id AND r.environment_id = k.environment_id
        WHERE j.completed_at IS NOT NULL AND r.phase <> 'cancelled'
        GROUP BY 1, 2, 3, 4`,
      [pairs((row) => row.version_id), dependedOn],
    ),
    (c) => `${c.version_id}/${c.environment_id}`,
  );

  for (const { row, ruleId, spec, environments: envs } of dependencies) {
    const fact: ProgressionFact = {
      ruleId,
      environments: envs.map((env) => {
        const firstSuccessPerResource = new Map<string, number>();
        for (const c of completions.get(`${row.version_id}/${env.id}`) ?? []) {
          if (
            !(spec.successStatuses ?? (RULE_DEFAULTS.successStatuses as readonly string[])).includes(c.status)
          )
            continue;
          const at = new Date(c.at).getTime();
          const seen = firstSuccessPerResource.get(c.resource_id);
          if (seen === undefined || at < seen) firstSuccessPerResource.set(c.resource_id, at);
        }
        return {
          id: env.id,
          name: env.name,
          targets: targetCounts.get(`${row.deployment_id}/${env.id}`) ?? 0,
          successes: [...firstSuccessPerResource.values()].sort((a, b) => a - b).map(iso),
        };
      }),
    };
    facts.set(row.id, [...(facts.get(row.id) ?? []), fact]);
  }
  return facts;
}
