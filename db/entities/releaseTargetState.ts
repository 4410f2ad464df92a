import { defineEntity, type InferEntity } from '@mikro-orm/core';

/**
 * docs/behaviour.md "Release": the desired release (selected by policies), the current one (its job succeeded
 * and verified) and the latest job; plus the release holding the target while its jobs are active.
 */
export const ReleaseTargetStateSchema = defineEntity({
  name: 'ReleaseTargetState',
  tableName: 'release_target_state',
  properties: (p) => ({
    resourceId: p.uuid().primary(),
    environmentId: p.uuid().primary(),
    deploymentId: p.uuid().primary(),
    workspaceId: p.uuid(),
    desiredReleaseId: p.uuid().nullable(),
    currentReleaseId: p.uuid().nullable(),
    activeReleaseId: p.uuid().nullable(),
    latestJobId: p.uuid().nullable(),
    newestReleaseId: p.uuid().nullable(),
    newestVersionId: p.uuid().nullable(),
    newestPhase: p.string().nullable(),
    currentVersionId: p.uuid().nullable(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  }),
});
export type ReleaseTargetState = InferEntity<typeof ReleaseTargetStateSchema>;
