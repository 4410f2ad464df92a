import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanVariable } from '../../domain/jobPlan';
import type { SecretBox } from '../../db/secrets';
import { isSealedValue, jobSecrets, openTree } from '../../db/sensitiveValues';
import { uuidArray } from '../../db/sql';

/**
 * The variables each rollback among these releases restores (docs/behaviour.md "Rollback"): a
 * release whose latest run began as a rollback runs with the variables its last successful job ran
 * with, secrets opened from that job's snapshot, not with those resolved now. Releases that are not
 * rollbacks, or have no successful job, are absent.
 */
export async function rollbackVariables(
  tx: EntityManager,
  box: SecretBox,
  releaseIds: readonly string[],
): Promise<Map<string, PlanVariable[]>> {
  const rows = await tx.execute<{ id: string; workspace_id: string; variables: Record<string, unknown> }[]>(
    `SELECT r.id, r.workspace_id, j.variables
       FROM release r
       JOIN LATERAL (SELECT dispatch_context->'variables' AS variables FROM job
                      WHERE release_id = r.id AND status = 'successful'
                      ORDER BY attempt DESC, created_at DESC LIMIT 1) j ON true
      WHERE r.id = ANY(?::uuid[]) AND (r.redeploys->-1->>'rollbackOf') IS NOT NULL`,
    [uuidArray(releaseIds)],
  );
  return new Map(
    rows.map((row) => {
      const secrets = jobSecrets(box, { workspaceId: row.workspace_id, releaseId: row.id });
      return [
        row.id,
        Object.entries(row.variables ?? {}).map(([key, value]) =>
          isSealedValue(value)
            ? { key, value: openTree(secrets, value), sensitive: true }
            : { key, value, sensitive: false },
        ),
      ];
    }),
  );
}
