import type { VersionWithDependencies } from '../../application/versionDependencies';
import { redactConfig } from '../../db/sensitiveValues';
import { ROLLOUT_STATUSES, VERSION_STATUSES } from '../../domain/versionStatus';
import { celExpression } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import { filteredPageQuery, iso, isoOrNull, JsonObjectSchema, MetadataSchema, Timestamp } from './common';
import { z } from './zod';

const Tag = displayText(z.string().trim().min(1).max(255), 'single');
const VersionName = displayText(z.string().max(255), 'single');

export const VersionStatusSchema = z.enum(VERSION_STATUSES).openapi('DeploymentVersionStatus');

export const RolloutSchema = z
  .object({
    status: z.enum(ROLLOUT_STATUSES),
    releaseCount: z.number().int(),
    completedAt: Timestamp.nullable(),
  })
  .openapi('VersionRollout', {
    description: 'Progress of the fan-out that gives a ready version one release per release target',
  });

export const DeploymentVersionSchema = z
  .object({
    id: z.uuid(),
    deploymentId: z.uuid(),
    tag: z.string(),
    name: z.string().nullable(),
    status: VersionStatusSchema,
    config: JsonObjectSchema,
    jobAgentConfig: JsonObjectSchema,
    metadata: MetadataSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    rollout: RolloutSchema.nullable(),
    dependencies: z.record(z.uuid(), z.object({ versionSelector: z.string() })).openapi({
      description:
        'Dependency deployment id → the selector its current version on the same resource must match; {} for none',
    }),
  })
  .openapi('DeploymentVersion');

/** What a version's dependency on another deployment asks of that deployment's current version. */
export const DependencyBody = z
  .object({ versionSelector: celExpression('version') })
  .openapi('VersionDependencyInput');

export const VersionDependencySchema = z
  .object({ deploymentVersionId: z.uuid(), dependencyDeploymentId: z.uuid(), versionSelector: z.string() })
  .openapi('VersionDependency');

export const VersionDependencyParams = z.object({
  workspaceId: z.uuid(),
  deploymentVersionId: z.uuid(),
  dependencyDeploymentId: z.uuid(),
});

export const CreateVersionBody = z
  .object({
    tag: Tag,
    name: VersionName.nullish().openapi({ description: 'Defaults to the tag (also when empty)' }),
    status: VersionStatusSchema.optional().openapi({ description: 'Defaults to `ready`' }),
    config: JsonObjectSchema.optional(),
    jobAgentConfig: JsonObjectSchema.optional(),
    metadata: MetadataSchema.optional(),
    dependencies: z
      .record(z.uuid(), DependencyBody)
      .refine((dependencies) => Object.keys(dependencies).length <= 50, 'at most 50 dependencies')
      .optional()
      .openapi({
        description:
          'Dependency deployment id → the selector its current version on the same resource must match; written with the version',
      }),
  })
  .openapi('CreateDeploymentVersion');

export const UpdateVersionBody = z
  .object({
    id: z
      .uuid()
      .optional()
      .openapi({ description: "The version's own id, as Ctrlplane's clients send it; no other" }),
    tag: Tag.optional(),
    name: VersionName.nullish(),
    status: VersionStatusSchema.optional().openapi({
      description: 'Allowed moves: building → ready, building → failed, ready → failed',
    }),
    config: JsonObjectSchema.optional(),
    jobAgentConfig: JsonObjectSchema.optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('UpdateDeploymentVersion');

export const VersionListQuery = filteredPageQuery('version').extend({
  status: VersionStatusSchema.optional(),
});

export const VersionParams = z.object({ workspaceId: z.uuid(), deploymentVersionId: z.uuid() });

export function toDeploymentVersion({
  version,
  dependencies,
}: VersionWithDependencies): z.infer<typeof DeploymentVersionSchema> {
  return {
    id: version.id,
    deploymentId: version.deploymentId,
    tag: version.tag,
    name: version.name ?? null,
    status: version.status,
    config: version.config,
    jobAgentConfig: redactConfig(version.jobAgentConfig),
    metadata: version.metadata,
    createdAt: iso(version.createdAt),
    updatedAt: iso(version.updatedAt),
    rollout: version.rolloutStatus
      ? {
          status: version.rolloutStatus,
          releaseCount: version.rolloutReleaseCount,
          completedAt: isoOrNull(version.rolloutCompletedAt),
        }
      : null,
    dependencies,
  };
}
