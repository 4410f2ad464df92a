import type { EntityManager } from '@mikro-orm/postgresql';
import type { SecretBox } from '../../db/secrets';
import { wakeReleases } from '../../db/releaseWake';
import { targetShipDigests } from '../planner/shipDigests';
import type { ApprovalScopeRecorded } from '../../domain/activityResults';

/**
 * An approval's scope (docs/behaviour.md "Approvals"): the digests of what every target of its
 * version in its environment would ship, read as soon as the decision is committed, so the approval
 * counts for what its approver saw and for nothing else, on targets that exist now and on targets
 * that appear later. Recorded only while the decision it was read for is the key's latest; then the
 * version's waiting releases there look again.
 */
export async function recordApprovalScope(
  em: EntityManager,
  box: SecretBox,
  approvalId: string,
  decision: number,
): Promise<ApprovalScopeRecorded> {
  const [approval] = await em.execute<
    { workspace_id: string; version_id: string; environment_id: string; deployment_id: string }[]
  >(
    `SELECT a.workspace_id, a.version_id, a.environment_id, v.deployment_id
       FROM approval a JOIN deployment_version v ON v.id = a.version_id
      WHERE a.id = ? AND a.decision = ? AND a.scope = 'pending'`,
    [approvalId, decision],
  );
  if (!approval) return { recorded: false, digests: 0, releasesWoken: 0 };
  const digests = await targetShipDigests(em, box, {
    workspaceId: approval.workspace_id,
    deploymentId: approval.deployment_id,
    environmentId: approval.environment_id,
    versionId: approval.version_id,
  });
  return em.transactional(async (tx) => {
    const updated = await tx.execute<{ id: string }[]>(
      `UPDATE approval SET scope = 'recorded' WHERE id = ? AND decision = ? AND scope = 'pending' RETURNING id`,
      [approvalId, decision],
    );
    if (updated.length === 0) return { recorded: false, digests: 0, releasesWoken: 0 };
    await tx.execute(
      `INSERT INTO approval_scope (approval_id, digest) SELECT ?, unnest(?::text[]) ON CONFLICT DO NOTHING`,
      [approvalId, `{${[...digests].join(',')}}`],
    );
    const waiting = await tx.execute<{ id: string }[]>(
      `SELECT id FROM release WHERE version_id = ? AND environment_id = ? AND phase = 'pending'`,
      [approval.version_id, approval.environment_id],
    );
    await wakeReleases(
      tx,
      waiting.map((row) => row.id),
    );
    return { recorded: true, digests: digests.size, releasesWoken: waiting.length };
  });
}
