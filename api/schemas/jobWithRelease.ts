import type { Deployment, Environment, Job, Resource } from '../../db/entities';
import type { JobWithRelease } from '../../application/jobs';
import { redactConfig } from '../../db/sensitiveValues';
import { ifPresent, iso, JsonObjectSchema, Timestamp } from './common';
import { JobSchema, toJob } from './job';
import { ReleaseWithVersionSchema, toReleaseWithVersion } from './release';
import { z } from './zod';

/**
 * Ctrlplane's `JobWithRelease` (`GET /jobs`, `GET /jobs/{id}/with-release`): the job, its release with the version,
 * variables and target, and the target's deployment, environment and resource as Ctrlplane's clients read them (an
 * absent value is left out, never null).
 */

const Metadata = z.record(z.string(), z.string());

export const JobDeploymentSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    slug: z.string(),
    description: z.string().optional(),
    resourceSelector: z.string().optional(),
    jobAgentSelector: z
      .string()
      .openapi({ description: 'Empty when the deployment names its agents (jobAgents)' }),
    jobAgentConfig: JsonObjectSchema,
    metadata: Metadata,
  })
  .openapi('JobDeployment');

export const JobEnvironmentSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string().optional(),
    resourceSelector: z.string().optional(),
    metadata: Metadata,
    createdAt: Timestamp,
  })
  .openapi('JobEnvironment');

export const JobResourceSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    version: z.string(),
    kind: z.string(),
    identifier: z.string(),
    config: JsonObjectSchema,
    metadata: Metadata,
    providerId: z.uuid().optional(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    deletedAt: Timestamp.optional(),
  })
  .openapi('JobResource');

export const JobWithReleaseSchema = z
  .object({
    job: JobSchema,
    release: ReleaseWithVersionSchema.optional().openapi({ description: "Absent for a runbook run's job" }),
    deployment: JobDeploymentSchema.optional(),
    environment: JobEnvironmentSchema.optional(),
    resource: JobResourceSchema.optional(),
  })
  .openapi('JobWithRelease');

function toJobDeployment(deployment: Deployment): z.infer<typeof JobDeploymentSchema> {
  return {
    id: deployment.id,
    name: deployment.name,
    slug: deployment.slug,
    ...ifPresent('description', deployment.description),
    ...ifPresent('resourceSelector', deployment.resourceSelector),
    jobAgentSelector: deployment.jobAgentSelector ?? '',
    jobAgentConfig: redactConfig(deployment.jobAgentConfig ?? {}),
    metadata: deployment.metadata,
  };
}

function toJobEnvironment(environment: Environment): z.infer<typeof JobEnvironmentSchema> {
  return {
    id: environment.id,
    name: environment.name,
    ...ifPresent('description', environment.description),
    ...ifPresent('resourceSelector', environment.resourceSelector),
    metadata: environment.metadata,
    createdAt: iso(environment.createdAt),
  };
}

function toJobResource(resource: Resource): z.infer<typeof JobResourceSchema> {
  return {
    id: resource.id,
    workspaceId: resource.workspaceId,
    name: resource.name,
    version: resource.version,
    kind: resource.kind,
    identifier: resource.identifier,
    config: resource.config,
    metadata: resource.metadata,
    ...ifPresent('providerId', resource.providerId),
    createdAt: iso(resource.createdAt),
    updatedAt: iso(resource.updatedAt),
    ...ifPresent('deletedAt', resource.deletedAt && iso(resource.deletedAt)),
  };
}

export function toJobWithRelease(found: JobWithRelease | { job: Job }): z.infer<typeof JobWithReleaseSchema> {
  if (!('release' in found)) return { job: toJob(found.job) };
  const { job, release } = found;
  return {
    job: toJob(job),
    release: toReleaseWithVersion({ release, version: found.version, job }),
    deployment: toJobDeployment(found.deployment),
    environment: toJobEnvironment(found.environment),
    resource: toJobResource(found.resource),
  };
}
