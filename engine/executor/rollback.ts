import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobStatus } from '../../domain/jobStatus';
import { decideRollback } from '../../domain/rollback';
import { loadRelease } from '../eligibility/releaseFacts';
import { requestRedeploy } from './releaseRedeploy';
import { recordAuditEvents } from '../../db/audit';
import { releaseEvent } from '../../domain/audit';
import { releaseOfRow, type ReleaseIdentityRow } from '../../domain/orchestration';

/**
 * After a release failed, in the transaction that ended it: when a rollback rule of its target's
 * policies matches the failure (domain/rollback.ts), the target's previous successful release runs
 * again, marked as a rollback of this one and past its policies (they passed when it first ran); the
 * failed release's reason says what happened, or why nothing did (docs/behaviour.md "Rollback").
 * A release's latest redeploy says how its latest run began: a rollback's failure is not rolled back.
 */
export async function rollBackAfterFailure(tx: EntityManager, releaseId: string): Promise<void> {
  // Most workspaces have no rollback rule: one look at their policies spares a failure the facts.
  const [{ any } = { any: false }] = await tx.execute<{ any: boolean }[]>(
    `SELECT EXISTS (SELECT 1 FROM policy p JOIN release r ON r.workspace_id = p.workspace_id
                     WHERE r.id = ? AND p.enabled AND p.rules @> '[{"rollback": {}}]') AS any`,
    [releaseId],
  );
  if (!any) return;
  const loaded = await loadRelease(tx, releaseId);
  const rules = loaded?.facts.policies.flatMap((policy) => policy.rules) ?? [];
  if (!loaded || !rules.some((rule) => rule.rollback)) return;
  const [row] = await tx.execute<
    (ReleaseIdentityRow & {
      status: JobStatus | null;
      verification_failed: boolean | null;
      was_rollback: boolean;
      previous_id: string | null;
      previous_tag: string | null;
    })[]
  >(
    `SELECT r.id, r.workspace_id, r.deployment_id, r.environment_id, r.resource_id, r.version_id, j.status,
            EXISTS (SELECT 1 FROM job_verification v WHERE v.job_id = j.id AND v.status = 'failed') AS verification_failed,
            (r.redeploys->-1->>'rollbackOf') IS NOT NULL AS was_rollback,
            p.id AS previous_id, pv.tag AS previous_tag
       FROM release r
       LEFT JOIN LATERAL (SELECT id, status FROM job WHERE release_id = r.id
                           ORDER BY attempt DESC, created_at DESC LIMIT 1) j ON true
       LEFT JOIN release_target_state s
         ON s.resource_id = r.resource_id AND s.environment_id = r.environment_id AND s.deployment_id = r.deployment_id
       LEFT JOIN release p ON p.id = s.current_release_id AND p.id <> r.id
       LEFT JOIN deployment_version pv ON pv.id = p.version_id
      WHERE r.id = ?`,
    [releaseId],
  );
  const decision = decideRollback({
    rules,
    lastJob: row?.status
      ? { status: row.status, verificationFailed: row.verification_failed ?? false }
      : null,
    wasRollback: row?.was_rollback ?? false,
    previous: row?.previous_id ? { releaseId: row.previous_id, tag: row.previous_tag! } : null,
  });
  if (decision.kind === 'none') return;
  const note =
    decision.kind === 'refused'
      ? decision.note
      : `rolled back to ${decision.to.tag} (release ${decision.to.releaseId}): ${decision.why}`;
  await tx.execute(`UPDATE release SET phase_reason = phase_reason || '; ' || ? WHERE id = ?`, [
    note,
    releaseId,
  ]);
  if (decision.kind !== 'rollBack') return;
  await recordAuditEvents(tx, [
    releaseEvent('release.rolled_back', releaseOfRow(row!), {
      toReleaseId: decision.to.releaseId,
      toVersion: decision.to.tag,
      reason: decision.why,
    }),
  ]);
  const reason = `rollback after release ${releaseId} failed: ${decision.why}`;
  await requestRedeploy(
    tx,
    decision.to.releaseId,
    { at: new Date().toISOString(), by: 'rollback', overrideReason: reason, rollbackOf: releaseId },
    reason,
  );
}
