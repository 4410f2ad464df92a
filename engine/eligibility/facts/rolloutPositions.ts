import { iso, type FactBatch, type FactParts, type SqlReader } from './factLoader';

/**
 * Each release's place in its version's rollout to its environment, read for the releases under a
 * gradual rollout only: it costs a scan of the version's releases in the environment, once per
 * version and environment. Any other release is the first of one, started when it was created.
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'rollout'>> {
  const gradual = batch.under.gradualRollout;
  const positions = gradual
    ? await sql.execute<{ id: string; position: number; total: number; started_at: Date }[]>(
        `SELECT id, position, total, started_at FROM (
           SELECT r.id, (row_number() OVER w - 1)::int AS position, (count(*) OVER p)::int AS total,
                  min(r.created_at) OVER p AS started_at
             FROM release r JOIN (SELECT DISTINCT * FROM unnest(?::uuid[], ?::uuid[])) AS k(version_id, environment_id)
               ON r.version_id = k.version_id AND r.environment_id = k.environment_id
           WINDOW p AS (PARTITION BY r.version_id, r.environment_id),
                  w AS (PARTITION BY r.version_id, r.environment_id ORDER BY r.created_at, r.id)) ranked
          WHERE id = ANY(?::uuid[])`,
        [gradual.versionIds, gradual.environmentIds, gradual.ids],
      )
    : [];
  const byRelease = new Map(
    positions.map((p) => [p.id, { position: p.position, total: p.total, startedAt: iso(p.started_at) }]),
  );
  return new Map(
    batch.releases.map((release) => [
      release.id,
      { rollout: byRelease.get(release.id) ?? { position: 0, total: 1, startedAt: iso(release.created_at) } },
    ]),
  );
}
