import type { DependencyFact } from '../../../domain/rules/versionDependency';
import { VERSION_JSON } from '../versionColumns';
import { iso, type FactBatch, type FactParts, type SqlReader } from './factLoader';

/**
 * Each version dependency of each release's version, with the dependency's current version on the
 * release's resource: that of its most recent success there, in any environment.
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'versionDependencies'>> {
  const rows = await sql.execute<{ of: string; dependencies: DependencyFact[] }[]>(
    `SELECT k.of,
            json_agg(json_build_object('deploymentId', dep.dependency_deployment_id, 'deploymentName', dd.name,
              'versionSelector', dep.version_selector,
              'currentVersion', (SELECT ${VERSION_JSON('cv')}
                                   FROM release_target_state cs
                                   JOIN release cr ON cr.id = cs.current_release_id
                                   JOIN deployment_version cv ON cv.id = cr.version_id
                                  WHERE cs.resource_id = k.resource_id AND cs.deployment_id = dep.dependency_deployment_id
                                  ORDER BY cr.completed_at DESC NULLS LAST, cr.id DESC LIMIT 1))
                     ORDER BY dep.created_at, dep.dependency_deployment_id) AS dependencies
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(of, version_id, resource_id)
       JOIN deployment_version_dependency dep ON dep.deployment_version_id = k.version_id
       JOIN deployment dd ON dd.id = dep.dependency_deployment_id
      GROUP BY k.of`,
    [batch.ids, batch.versionIds, batch.resourceIds],
  );
  const byRelease = new Map(rows.map((row) => [row.of, row.dependencies]));
  return new Map(
    batch.releases.map((release) => [
      release.id,
      {
        versionDependencies: (byRelease.get(release.id) ?? []).map(({ currentVersion, ...dependency }) => ({
          ...dependency,
          currentVersion: currentVersion && { ...currentVersion, createdAt: iso(currentVersion.createdAt) },
        })),
      },
    ]),
  );
}
