import type { ReleaseFacts } from '../../../domain/gates';
import { OPEN_RELEASES_OF } from '../../../db/releaseWake';
import { VERSION_JSON } from '../versionColumns';
import { iso, type FactBatch, type FactParts, type SqlReader } from './factLoader';

/** The open releases of each release's target with a newer version (for supersession). */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'newerReleases'>> {
  const rows = await sql.execute<{ of: string; releases: ReleaseFacts['newerReleases'] }[]>(
    `SELECT me.id AS of,
            json_agg(json_build_object('id', o.id, 'version', ${VERSION_JSON('ov')},
              'rejected', EXISTS (SELECT 1 FROM approval a WHERE a.version_id = o.version_id
                                    AND a.environment_id = o.environment_id AND a.status = 'rejected'))) AS releases
       FROM release me
       JOIN deployment_version mv ON mv.id = me.version_id
      CROSS JOIN LATERAL (${OPEN_RELEASES_OF('me')}) o
       JOIN deployment_version ov ON ov.id = o.version_id
      WHERE me.id = ANY(?::uuid[]) AND (ov.created_at, ov.id) > (mv.created_at, mv.id)
      GROUP BY me.id`,
    [batch.ids],
  );
  const byRelease = new Map(rows.map((row) => [row.of, row.releases]));
  return new Map(
    batch.releases.map((release) => [
      release.id,
      {
        newerReleases: (byRelease.get(release.id) ?? []).map(({ id, version, rejected }) => ({
          id,
          rejected,
          version: { ...version, createdAt: iso(version.createdAt) },
        })),
      },
    ]),
  );
}
