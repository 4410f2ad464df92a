import type { EnvironmentProgressionRule } from '../../../domain/policies';
import { RULE_DEFAULTS } from '../../../domain/ruleDefaults';
import type { ProgressionFact } from '../../../domain/rules/environmentProgression';
import { selectorMatches, type EnvironmentFields } from '../../../domain/selectors';
import { uuidArray } from '../../../db/sql';
import type { z } from 'zod';
import { iso, type BatchRelease, type FactBatch, type FactParts, type SqlReader } from './factLoader';

type Progression = z.infer<typeof EnvironmentProgressionRule>;

/** One progression rule of one release, with the environments it depends on. */
interface Dependency {
  release: BatchRelease;
  ruleId: string;
  spec: Progression;
  environments: EnvironmentFields[];
}

/** A version's jobs in an environment on one resource that ended in one status, first at `at`. */
interface Completion {
  resource_id: string;
  status: string;
  at: string;
}

/**
 * Progression facts of every (release, progression rule) of the batch: for each environment the
 * rule depends on (its selector matched against the workspace's environments, the release's own
 * left out), the deployment's target count there and the times this version succeeded there, one
 * success per resource, by the rule's success statuses. Three statements, for the releases under a
 * progression rule only.
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'progression'>> {
  const facts = new Map<string, ProgressionFact[]>();
  const dependencies = await dependedOnEnvironments(sql, batch);
  if (dependencies.length > 0) {
    const { targetCounts, completions } = await readProgress(sql, dependencies);
    for (const { release, ruleId, spec, environments } of dependencies) {
      const successStatuses: readonly string[] = spec.successStatuses ?? RULE_DEFAULTS.successStatuses;
      const fact: ProgressionFact = {
        ruleId,
        environments: environments.map((env) => ({
          id: env.id,
          name: env.name,
          targets: targetCounts.get(`${release.deployment_id}/${env.id}`) ?? 0,
          successes: firstSuccesses(
            completions.get(`${release.version_id}/${env.id}`) ?? [],
            successStatuses,
          ),
        })),
      };
      facts.set(release.id, [...(facts.get(release.id) ?? []), fact]);
    }
  }
  return new Map(batch.releases.map((release) => [release.id, { progression: facts.get(release.id) ?? [] }]));
}

/** Each progression rule of the batch's releases, with the environments of its workspace it depends on. */
async function dependedOnEnvironments(sql: SqlReader, batch: FactBatch): Promise<Dependency[]> {
  const progressing = batch.under.environmentProgression;
  if (!progressing) return [];
  const workspaces = await sql.execute<{ workspace_id: string; environments: EnvironmentFields[] }[]>(
    `SELECT workspace_id, json_agg(json_build_object('id', id, 'name', name, 'metadata', metadata)) AS environments
       FROM environment WHERE workspace_id = ANY(?::uuid[])
      GROUP BY workspace_id`,
    [progressing.distinctWorkspaceIds],
  );
  const environmentsOf = new Map(workspaces.map((row) => [row.workspace_id, row.environments]));
  const dependedOn = (release: BatchRelease, spec: Progression) =>
    (environmentsOf.get(release.workspace_id) ?? []).filter(
      (env) =>
        env.id !== release.environment_id &&
        selectorMatches('environment', spec.dependsOnEnvironmentSelector, { environment: env }),
    );
  return progressing.releases.flatMap((release) =>
    release.rules.flatMap(({ id, environmentProgression: spec }) =>
      spec ? [{ release, ruleId: id, spec, environments: dependedOn(release, spec) }] : [],
    ),
  );
}

/**
 * The deployments' target counts in the environments depended on, by `deployment/environment`, and
 * the versions' completions there, by `version/environment`.
 */
async function readProgress(
  sql: SqlReader,
  dependencies: readonly Dependency[],
): Promise<{ targetCounts: Map<string, number>; completions: Map<string, Completion[]> }> {
  const pairs = (pick: (release: BatchRelease) => string) =>
    uuidArray(dependencies.flatMap(({ release, environments }) => environments.map(() => pick(release))));
  const dependedOn = uuidArray(dependencies.flatMap(({ environments }) => environments.map((env) => env.id)));
  const counts = await sql.execute<{ deployment_id: string; environment_id: string; targets: number }[]>(
    `SELECT t.deployment_id, t.environment_id, count(*)::int AS targets
       FROM release_target t JOIN (SELECT DISTINCT * FROM unnest(?::uuid[], ?::uuid[])) AS k(deployment_id, environment_id)
         ON t.deployment_id = k.deployment_id AND t.environment_id = k.environment_id
      GROUP BY 1, 2`,
    [pairs((release) => release.deployment_id), dependedOn],
  );
  const completions = await sql.execute<
    { version_id: string; environment_id: string; completions: Completion[] }[]
  >(
    `SELECT c.version_id, c.environment_id,
            json_agg(json_build_object('resource_id', c.resource_id, 'status', c.status, 'at', c.at)) AS completions
       FROM (SELECT r.version_id, r.environment_id, r.resource_id, j.status, min(j.completed_at) AS at
               FROM job j JOIN release r ON r.id = j.release_id
               JOIN (SELECT DISTINCT * FROM unnest(?::uuid[], ?::uuid[])) AS k(version_id, environment_id)
                 ON r.version_id = k.version_id AND r.environment_id = k.environment_id
              WHERE j.completed_at IS NOT NULL AND r.phase <> 'cancelled'
              GROUP BY 1, 2, 3, 4) c
      GROUP BY 1, 2`,
    [pairs((release) => release.version_id), dependedOn],
  );
  return {
    targetCounts: new Map(counts.map((c) => [`${c.deployment_id}/${c.environment_id}`, c.targets])),
    completions: new Map(completions.map((c) => [`${c.version_id}/${c.environment_id}`, c.completions])),
  };
}

/** The first success on each resource among `completions`, ascending. */
function firstSuccesses(completions: readonly Completion[], successStatuses: readonly string[]): string[] {
  const firstSuccessPerResource = new Map<string, number>();
  for (const completion of completions) {
    if (!successStatuses.includes(completion.status)) continue;
    const at = new Date(completion.at).getTime();
    const seen = firstSuccessPerResource.get(completion.resource_id);
    if (seen === undefined || at < seen) firstSuccessPerResource.set(completion.resource_id, at);
  }
  return [...firstSuccessPerResource.values()].sort((a, b) => a - b).map(iso);
}
