import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleaseFacts, VersionFacts } from '../domain/gates';
import type { ReleasePhase } from '../domain/releases';
import { selectorMatches } from '../domain/selectors';
import { enabledPolicies, policiesForTarget } from './policyMatching';

/**
 * Everything the gates of one release depend on, read in one place so the release workflow's
 * history records exactly what each evaluation saw.
 */
export interface LoadedRelease {
  releaseId: string;
  workspaceId: string;
  phase: ReleasePhase;
  redeployRequested: boolean;
  /** The highest job attempt so far (0 before the first jobs). */
  lastAttempt: number;
  facts: ReleaseFacts;
}

interface ReleaseRow {
  id: string;
  workspace_id: string;
  deployment_id: string;
  environment_id: string;
  resource_id: string;
  version_id: string;
  phase: ReleasePhase;
  redeploy_requested_at: Date | null;
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

const VERSION_JSON = (alias: string) =>
  `json_build_object('id', ${alias}.id, 'tag', ${alias}.tag, 'name', ${alias}.name, 'status', ${alias}.status,
     'metadata', ${alias}.metadata, 'config', ${alias}.config, 'createdAt', ${alias}.created_at)`;

export async function loadRelease(em: EntityManager, releaseId: string): Promise<LoadedRelease | null> {
  const [row] = await em.execute<ReleaseRow[]>(
    `SELECT rl.id, rl.workspace_id, rl.deployment_id, rl.environment_id, rl.resource_id, rl.version_id, rl.phase,
            rl.redeploy_requested_at, rl.created_at,
            ${VERSION_JSON('v')} AS version,
            json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
            json_build_object('id', e.id, 'name', e.name, 'metadata', e.metadata) AS environment,
            json_build_object('kind', r.kind, 'version', r.version, 'name', r.name, 'identifier', r.identifier,
                              'metadata', r.metadata, 'config', r.config) AS resource,
            EXISTS (SELECT 1 FROM release_target t WHERE t.resource_id = rl.resource_id
                      AND t.environment_id = rl.environment_id AND t.deployment_id = rl.deployment_id) AS target_exists,
            s.active_release_id, dv.id AS deployed_version_id, dv.created_at AS deployed_created_at,
            (SELECT coalesce(max(attempt), 0)::int FROM job WHERE release_id = rl.id) AS last_attempt
       FROM release rl
       JOIN deployment_version v ON v.id = rl.version_id
       JOIN deployment d ON d.id = rl.deployment_id
       JOIN environment e ON e.id = rl.environment_id
       JOIN resource r ON r.id = rl.resource_id
       LEFT JOIN release_target_state s
         ON s.resource_id = rl.resource_id AND s.environment_id = rl.environment_id AND s.deployment_id = rl.deployment_id
       LEFT JOIN release cr ON cr.id = coalesce(s.active_release_id, s.current_release_id)
       LEFT JOIN deployment_version dv ON dv.id = cr.version_id
      WHERE rl.id = ?`,
    [releaseId],
  );
  if (!row) return null;

  const policies = policiesForTarget(await enabledPolicies(em, row.workspace_id), row);
  const approvals = await em.execute<ReleaseFacts['approvals']>(
    `SELECT user_id AS "userId", user_name AS "userName", status, reason, updated_at AS at
       FROM approval WHERE version_id = ? AND environment_id = ? ORDER BY updated_at`,
    [row.version_id, row.environment_id],
  );
  const newerReleases = await em.execute<ReleaseFacts['newerReleases']>(
    `SELECT o.id, ${VERSION_JSON('ov')} AS version,
            EXISTS (SELECT 1 FROM approval a WHERE a.version_id = o.version_id AND a.environment_id = o.environment_id
                      AND a.status = 'rejected') AS rejected
       FROM release o JOIN deployment_version ov ON ov.id = o.version_id
      WHERE o.resource_id = ? AND o.environment_id = ? AND o.deployment_id = ? AND o.phase IN ('pending', 'running')
        AND (ov.created_at, ov.id) > (?::timestamptz, ?::uuid)`,
    [row.resource_id, row.environment_id, row.deployment_id, row.version.createdAt, row.version_id],
  );
  // A target's place in its version's rollout costs a count over the version's releases: only for gradual rollouts.
  const gradual = policies.some((policy) => policy.rules.some((rule) => rule.gradualRollout));
  const [rollout] = gradual
    ? await em.execute<{ position: number; total: number; started_at: Date }[]>(
        `SELECT count(*) FILTER (WHERE (created_at, id) < (?::timestamptz, ?::uuid))::int AS position,
                count(*)::int AS total, min(created_at) AS started_at
           FROM release WHERE version_id = ? AND environment_id = ?`,
        [row.created_at, row.id, row.version_id, row.environment_id],
      )
    : [];

  const progression: ReleaseFacts['progression'] = [];
  for (const policy of policies) {
    for (const rule of policy.rules) {
      if (!rule.environmentProgression) continue;
      const spec = rule.environmentProgression;
      const candidates = await em.execute<{ id: string; name: string; metadata: Record<string, string> }[]>(
        `SELECT id, name, metadata FROM environment WHERE workspace_id = ? AND id <> ?`,
        [row.workspace_id, row.environment_id],
      );
      const environments = [];
      for (const env of candidates.filter((candidate) =>
        selectorMatches('environment', spec.dependsOnEnvironmentSelector, { environment: candidate }),
      )) {
        const [counts] = await em.execute<{ targets: number }[]>(
          `SELECT count(*)::int AS targets FROM release_target WHERE deployment_id = ? AND environment_id = ?`,
          [row.deployment_id, env.id],
        );
        const successes = await em.execute<{ at: Date }[]>(
          `SELECT min(j.completed_at) AS at FROM job j JOIN release r ON r.id = j.release_id
            WHERE r.version_id = ? AND r.environment_id = ? AND j.status = ANY(?::text[]) AND j.completed_at IS NOT NULL
            GROUP BY r.resource_id ORDER BY 1`,
          [row.version_id, env.id, `{${spec.successStatuses.join(',')}}`],
        );
        environments.push({
          id: env.id,
          name: env.name,
          targets: counts?.targets ?? 0,
          successes: successes.map((s) => new Date(s.at).toISOString()),
        });
      }
      progression.push({ ruleId: rule.id, environments });
    }
  }

  const iso = (value: Date | string) => new Date(value).toISOString();
  return {
    releaseId: row.id,
    workspaceId: row.workspace_id,
    phase: row.phase,
    redeployRequested: row.redeploy_requested_at !== null,
    lastAttempt: row.last_attempt,
    facts: {
      release: { id: row.id, environmentId: row.environment_id, createdAt: iso(row.created_at) },
      version: { ...row.version, createdAt: iso(row.version.createdAt) },
      deployment: row.deployment,
      environment: row.environment,
      resource: row.resource,
      targetExists: row.target_exists,
      policies: policies.map(({ id, name, rules }) => ({ id, name, rules })),
      approvals: approvals.map((a) => ({ ...a, at: iso(a.at) })),
      progression,
      activeReleaseId: row.active_release_id,
      deployedVersionId: row.deployed_version_id,
      deployedVersionCreatedAt: row.deployed_created_at ? iso(row.deployed_created_at) : null,
      newerReleases: newerReleases.map((n) => ({
        ...n,
        version: { ...n.version, createdAt: iso(n.version.createdAt) },
      })),
      rollout: {
        position: rollout?.position ?? 0,
        total: rollout?.total ?? 1,
        startedAt: iso(rollout?.started_at ?? row.created_at),
      },
    },
  };
}
