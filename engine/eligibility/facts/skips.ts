import type { SkipFact } from '../../../domain/policySkips';
import { iso, type FactBatch, type FactParts, type SqlReader } from './factLoader';

/** A stored skip with its scope: an environment, a resource, or neither (every target of its version). */
interface ScopedSkip extends SkipFact {
  environmentId: string | null;
  resourceId: string | null;
}

/**
 * The unexpired policy skips of each release's version on its target: those scoped to its
 * environment, to its resource, or to neither. Read once per version, oldest first.
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'skips'>> {
  const rows = await sql.execute<{ version_id: string; skips: ScopedSkip[] }[]>(
    `SELECT s.version_id,
            json_agg(json_build_object('id', s.id, 'ruleId', s.rule_id, 'reason', s.reason, 'expiresAt', s.expires_at,
                                       'environmentId', s.environment_id, 'resourceId', s.resource_id,
                                       'createdBy', json_build_object('id', s.created_by_id, 'name', s.created_by_name))
                     ORDER BY s.created_at, s.id) AS skips
       FROM policy_skip s WHERE s.version_id = ANY(?::uuid[]) AND s.expires_at > now()
      GROUP BY s.version_id`,
    [batch.distinctVersionIds],
  );
  const byVersion = new Map(rows.map((row) => [row.version_id, row.skips]));
  return new Map(
    batch.releases.map((release) => {
      const skips = (byVersion.get(release.version_id) ?? [])
        .filter(
          (skip) =>
            (skip.environmentId === null || skip.environmentId === release.environment_id) &&
            (skip.resourceId === null || skip.resourceId === release.resource_id),
        )
        .map(({ id, ruleId, reason, expiresAt, createdBy }) => ({
          id,
          ruleId,
          reason,
          expiresAt: iso(expiresAt),
          createdBy,
        }));
      return [release.id, skips.length > 0 ? { skips } : {}];
    }),
  );
}
