import type { UpstreamFacts } from '../../../domain/rules/deploymentDependency';
import { VERSION_JSON } from '../versionColumns';
import { iso, type FactBatch, type FactParts, type SqlReader } from './factLoader';

/**
 * Other deployments' current versions on each release's resource, read for the releases under a
 * `deploymentDependency` rule only (absent for the others).
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'upstream'>> {
  const dependent = batch.under.deploymentDependency;
  if (!dependent) return new Map(batch.releases.map((release) => [release.id, {}]));
  const rows = await sql.execute<{ of: string; upstream: NonNullable<UpstreamFacts['upstream']> }[]>(
    `SELECT u.of, json_agg(json_build_object('deployment', u.deployment, 'version', u.version)
                           ORDER BY u.deployment_id) AS upstream
       FROM (SELECT DISTINCT ON (k.of, cs.deployment_id) k.of, cs.deployment_id,
                    json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
                    ${VERSION_JSON('cv')} AS version
               FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(of, resource_id, deployment_id)
               JOIN release_target_state cs ON cs.resource_id = k.resource_id AND cs.deployment_id <> k.deployment_id
               JOIN release cr ON cr.id = cs.current_release_id
               JOIN deployment_version cv ON cv.id = cr.version_id
               JOIN deployment d ON d.id = cs.deployment_id
              ORDER BY k.of, cs.deployment_id, cr.completed_at DESC NULLS LAST, cr.id DESC) u
      GROUP BY u.of`,
    [dependent.ids, dependent.resourceIds, dependent.deploymentIds],
  );
  const byRelease = new Map(rows.map((row) => [row.of, row.upstream]));
  const dependentIds = new Set(dependent.releases.map((release) => release.id));
  return new Map(
    batch.releases.map((release) => [
      release.id,
      dependentIds.has(release.id)
        ? {
            upstream: (byRelease.get(release.id) ?? []).map(({ deployment, version }) => ({
              deployment,
              version: { ...version, createdAt: iso(version.createdAt) },
            })),
          }
        : {},
    ]),
  );
}
