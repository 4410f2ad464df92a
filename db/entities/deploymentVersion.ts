import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { RolloutStatus, VersionStatus } from '../../domain/versionStatus';
import { timestamps, workspaceScoped } from './common';

export const DeploymentVersionSchema = defineEntity({
  name: 'DeploymentVersion',
  tableName: 'deployment_version',
  uniques: [{ properties: ['deploymentId', 'tag'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    deploymentId: p.uuid(),
    tag: p.text(),
    name: p.text().nullable(),
    status: p.text().$type<VersionStatus>(),
    config: p.json<Record<string, unknown>>(),
    jobAgentConfig: p.json<Record<string, unknown>>(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
    /** Progress of the fan-out that gives a ready version one release per release target. */
    rolloutStatus: p.text().$type<RolloutStatus>().nullable(),
    rolloutReleaseCount: p.integer().default(0),
    rolloutCompletedAt: p.datetime().nullable(),
    /** The API key that created it (`admin` for the operator; null when created before this was kept). */
    createdById: p.text().nullable(),
  }),
});
export type DeploymentVersion = InferEntity<typeof DeploymentVersionSchema>;
