import type { EntityManager } from '@mikro-orm/postgresql';
import { doraFigures, type DoraCounts, type DoraFigures } from '../domain/dora';
import { NotFoundError } from '../domain/errors';

export interface DoraReport {
  deploymentId: string;
  window: { days: number; from: string; to: string };
  overall: DoraFigures;
  /** Releases that ended, by UTC day (days without any left out), oldest first: what the board charts. */
  daily: { day: string; succeeded: number; failed: number }[];
  environments: ({ environmentId: string; environmentName: string } & DoraFigures)[];
}

interface CountsRow {
  environment_id: string | null;
  environment_name: string | null;
  succeeded: number;
  failed: number;
  lead_p50: number | null;
  lead_p90: number | null;
  restore_p50: number | null;
  restore_p90: number | null;
  unrestored: number;
}

const DAY_MS = 86_400_000;

/**
 * A deployment's DORA figures (domain/dora.ts), set-based: one statement reads the releases that
 * ended in the window through `release_completed_idx`, each failure's restore by its target's next
 * success (the release key's index), and sums them per environment and overall (grouping sets).
 */
export class DoraView {
  constructor(private readonly em: EntityManager) {}

  async report(
    workspaceId: string,
    deploymentId: string,
    days: number,
    now = new Date(),
  ): Promise<DoraReport> {
    const [owned] = await this.em.execute(`SELECT 1 FROM deployment WHERE id = ? AND workspace_id = ?`, [
      deploymentId,
      workspaceId,
    ]);
    if (!owned) throw new NotFoundError('deployment', deploymentId);
    const from = new Date(now.getTime() - days * DAY_MS);
    const rows = await this.em.execute<CountsRow[]>(
      `WITH ended AS (
         SELECT r.environment_id, r.resource_id, r.phase, r.completed_at,
                extract(epoch FROM r.completed_at - v.created_at)::float8 AS lead_seconds
           FROM release r JOIN deployment_version v ON v.id = r.version_id
          WHERE r.deployment_id = ? AND r.completed_at >= ? AND r.completed_at < ?
            AND r.phase IN ('succeeded', 'failed')
       ), measured AS (
         SELECT ended.*,
                CASE WHEN ended.phase = 'failed' THEN
                  extract(epoch FROM (SELECT min(s.completed_at) FROM release s
                                       WHERE s.resource_id = ended.resource_id AND s.environment_id = ended.environment_id
                                         AND s.deployment_id = ? AND s.phase = 'succeeded'
                                         AND s.completed_at > ended.completed_at) - ended.completed_at)::float8
                END AS restore_seconds
           FROM ended
       )
       SELECT m.environment_id, e.name AS environment_name,
              count(*) FILTER (WHERE m.phase = 'succeeded')::int AS succeeded,
              count(*) FILTER (WHERE m.phase = 'failed')::int AS failed,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY m.lead_seconds) FILTER (WHERE m.phase = 'succeeded') AS lead_p50,
              percentile_cont(0.9) WITHIN GROUP (ORDER BY m.lead_seconds) FILTER (WHERE m.phase = 'succeeded') AS lead_p90,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY m.restore_seconds) AS restore_p50,
              percentile_cont(0.9) WITHIN GROUP (ORDER BY m.restore_seconds) AS restore_p90,
              count(*) FILTER (WHERE m.phase = 'failed' AND m.restore_seconds IS NULL)::int AS unrestored
         FROM measured m JOIN environment e ON e.id = m.environment_id
        GROUP BY GROUPING SETS ((m.environment_id, e.name), ())
        ORDER BY e.name NULLS FIRST, m.environment_id NULLS FIRST`,
      [deploymentId, from, now, deploymentId],
    );
    const daily = await this.em.execute<DoraReport['daily']>(
      `SELECT to_char(date_trunc('day', completed_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day,
              count(*) FILTER (WHERE phase = 'succeeded')::int AS succeeded,
              count(*) FILTER (WHERE phase = 'failed')::int AS failed
         FROM release
        WHERE deployment_id = ? AND completed_at >= ? AND completed_at < ? AND phase IN ('succeeded', 'failed')
        GROUP BY 1 ORDER BY 1`,
      [deploymentId, from, now],
    );
    const counts = (row: CountsRow | undefined): DoraCounts => ({
      succeeded: row?.succeeded ?? 0,
      failed: row?.failed ?? 0,
      leadTimeP50: row?.lead_p50 ?? null,
      leadTimeP90: row?.lead_p90 ?? null,
      restoreP50: row?.restore_p50 ?? null,
      restoreP90: row?.restore_p90 ?? null,
      unrestored: row?.unrestored ?? 0,
    });
    return {
      deploymentId,
      window: { days, from: from.toISOString(), to: now.toISOString() },
      overall: doraFigures(counts(rows.find((row) => row.environment_id === null)), days),
      daily,
      environments: rows
        .filter((row) => row.environment_id !== null)
        .map((row) => ({
          environmentId: row.environment_id!,
          environmentName: row.environment_name!,
          ...doraFigures(counts(row), days),
        })),
    };
  }
}
