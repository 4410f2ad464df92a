import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { createdAt } from './common';

/** Derived from selectors and system links; kept exact by engine/targets/releaseTargetSync.ts. */
export const ReleaseTargetSchema = defineEntity({
  name: 'ReleaseTarget',
  tableName: 'release_target',
  properties: (p) => ({
    resourceId: p.uuid().primary(),
    environmentId: p.uuid().primary(),
    deploymentId: p.uuid().primary(),
    workspaceId: p.uuid(),
    ...createdAt(),
  }),
});
export type ReleaseTarget = InferEntity<typeof ReleaseTargetSchema>;
