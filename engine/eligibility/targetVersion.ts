import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../domain/errors';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';

/** A version of the target's deployment, by id, or its newest ready one; 404 otherwise. */
export async function targetVersion(
  em: EntityManager,
  workspaceId: string,
  target: ReleaseTargetRef,
  versionId?: string,
): Promise<{ id: string; tag: string }> {
  const [version] = await em.execute<{ id: string; tag: string }[]>(
    versionId
      ? `SELECT id, tag FROM deployment_version WHERE id = ? AND deployment_id = ? AND workspace_id = ?`
      : `SELECT id, tag FROM deployment_version WHERE deployment_id = ? AND workspace_id = ? AND status = 'ready'
          ORDER BY created_at DESC, id DESC LIMIT 1`,
    versionId ? [versionId, target.deploymentId, workspaceId] : [target.deploymentId, workspaceId],
  );
  if (!version)
    throw new NotFoundError(
      versionId ? 'version' : 'ready version of the deployment',
      versionId ?? target.deploymentId,
    );
  return version;
}
