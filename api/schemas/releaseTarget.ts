import type { ReleaseTarget } from '../../db/entities';
import { releaseTargetKey } from '../../domain/releaseTargets';
import { iso, pageQuery, Timestamp } from './common';
import { z } from './zod';

export const ReleaseTargetSchema = z
  .object({
    key: z.string().openapi({ description: '{resourceId}-{environmentId}-{deploymentId}' }),
    resourceId: z.uuid(),
    environmentId: z.uuid(),
    deploymentId: z.uuid(),
    createdAt: Timestamp,
  })
  .openapi('ReleaseTarget');

export const ReleaseTargetListQuery = pageQuery().extend({
  deploymentId: z.uuid().optional(),
  environmentId: z.uuid().optional(),
  resourceId: z.uuid().optional(),
});

export const ReleaseTargetParams = z.object({ workspaceId: z.uuid(), releaseTargetKey: z.string().max(120) });

export function toReleaseTarget(target: ReleaseTarget): z.infer<typeof ReleaseTargetSchema> {
  return {
    key: releaseTargetKey(target),
    resourceId: target.resourceId,
    environmentId: target.environmentId,
    deploymentId: target.deploymentId,
    createdAt: iso(target.createdAt),
  };
}
