import type { ApprovalFact } from '../../../domain/rules/anyApproval';
import { iso, type FactBatch, type FactParts, type SqlReader } from './factLoader';

/**
 * Approvals and rejections of each release's version in its environment, oldest first. Whether each
 * covers what the release would ship is read after (engine/planner/shipDigests.ts `withShipDigests`).
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'approvals'>> {
  const rows = await sql.execute<{ of: string; approvals: ApprovalFact[] }[]>(
    `SELECT k.of, json_agg(json_build_object('userId', a.user_id, 'userName', a.user_name, 'status', a.status,
                                             'reason', a.reason, 'at', a.updated_at) ORDER BY a.updated_at) AS approvals
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(of, version_id, environment_id)
       JOIN approval a ON a.version_id = k.version_id AND a.environment_id = k.environment_id
      GROUP BY k.of`,
    [batch.ids, batch.versionIds, batch.environmentIds],
  );
  const byRelease = new Map(rows.map((row) => [row.of, row.approvals]));
  return new Map(
    batch.releases.map((release) => [
      release.id,
      {
        approvals: (byRelease.get(release.id) ?? []).map((approval) => ({
          ...approval,
          at: iso(approval.at),
        })),
      },
    ]),
  );
}
