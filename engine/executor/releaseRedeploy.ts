import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleaseIdentityRow } from '../../domain/orchestration';
import { enqueueOrchestration } from '../../db/outbox';
import type { RedeployRecord } from '../../db/entities';

/**
 * Opens a release again to run it with a new job (a person's redeploy, or a rollback): pending with
 * `phaseReason`, the request appended to its redeploys, and its workflow started or woken through the
 * outbox in the caller's transaction. With `record.overrideReason` its policies are passed over.
 */
export async function requestRedeploy(
  tx: EntityManager,
  releaseId: string,
  record: RedeployRecord,
  phaseReason: string,
): Promise<void> {
  const [release] = await tx.execute<ReleaseIdentityRow[]>(
    `UPDATE release
        SET phase = 'pending', phase_reason = ?, redeploy_requested_at = ?, redeploy_override_reason = ?,
            redeploys = redeploys || jsonb_build_array(?::jsonb), completed_at = NULL, updated_at = now()
      WHERE id = ?
      RETURNING id, workspace_id, deployment_id, environment_id, resource_id, version_id`,
    [phaseReason, record.at, record.overrideReason, JSON.stringify(record), releaseId],
  );
  await enqueueOrchestration(tx, {
    kind: 'release.redeploy',
    release: {
      id: release!.id,
      workspaceId: release!.workspace_id,
      deploymentId: release!.deployment_id,
      environmentId: release!.environment_id,
      resourceId: release!.resource_id,
      versionId: release!.version_id,
    },
  });
}
