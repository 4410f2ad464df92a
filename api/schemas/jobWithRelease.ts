import type { Deployment, DeploymentVersion, Environment, Job, Resource } from '../../db/entities';
import type { JobWithRelease } from '../../db/stores/jobs';
import { isSealedValue, redactConfig, redactTree } from '../../db/sensitiveValues';
import { iso, JsonObjectSchema, Timestamp } from './common';
import { JobSchema, toJob } from './job';
import { ReleaseSchema, toRelease } from './release';
import { z } from './zod';

/**
 * Ctrlplane's `JobWithRelease` (`GET /jobs`, `GET /jobs/{id}/with-release`): the job, its release with the version,
 * variables and target, and the target's deployment, environment and resource as Ctrlplane's clients read them (an
 * absent value is left out, never null).
 */

const Metadata = z.record(z.string(), z.string());

export const JobReleaseVersionSchema = z
  .object({
    id: z.uuid(),
    name: z.string().openapi({ description: 'The tag when the version has no name' }),
    tag: z.string(),
    deploymentId: z.uuid(),
    status: z.enum(['building', 'ready', 'failed']),
    config: JsonObjectSchema,
    jobAgentConfig: JsonObjectSchema.openapi({ description: 'Secrets show as {"sensitive": true}' }),
    metadata: Metadata,
    createdAt: Timestamp,
  })
  .openapi('JobReleaseVersion');

export const JobReleaseSchema = ReleaseSchema.extend({
  version: JobReleaseVersionSchema,
  variables: z.record(z.string(), z.unknown()).openapi({
    description: "The job's resolved variables that are not sensitive (an object value as {object})",
  }),
  encryptedVariables: z.array(z.string()).openapi({ description: 'The keys of its sensitive variables' }),
  releaseTarget: z.object({ resourceId: z.uuid(), environmentId: z.uuid(), deploymentId: z.uuid() }),
}).openapi('JobRelease');

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
    release: JobReleaseSchema.optional().openapi({ description: "Absent for a workflow run's job" }),
    deployment: JobDeploymentSchema.optional(),
    environment: JobEnvironmentSchema.optional(),
    resource: JobResourceSchema.optional(),
  })
  .openapi('JobWithRelease');

/** The job's variables as its dispatch context recorded them: values in clear, sensitive ones by key only. */
function releaseVariables(
  job: Job,
): Pick<z.infer<typeof JobReleaseSchema>, 'variables' | 'encryptedVariables'> {
  const recorded = (job.dispatchContext as { variables?: Record<string, unknown> }).variables ?? {};
  const variables: Record<string, unknown> = {};
  const encryptedVariables: string[] = [];
  for (const [key, value] of Object.entries(recorded)) {
    if (isSealedValue(value)) encryptedVariables.push(key);
    else if (value !== null) variables[key] = typeof value === 'object' ? { object: value } : value;
  }
  return { variables, encryptedVariables };
}

function toJobVersion(version: DeploymentVersion): z.infer<typeof JobReleaseVersionSchema> {
  return {
    id: version.id,
    name: version.name ?? version.tag,
    tag: version.tag,
    deploymentId: version.deploymentId,
    status: version.status,
    config: version.config,
    jobAgentConfig: redactTree(version.jobAgentConfig),
    metadata: version.metadata,
    createdAt: iso(version.createdAt),
  };
}

function toJobDeployment(deployment: Deployment): z.infer<typeof JobDeploymentSchema> {
  return {
    id: deployment.id,
    name: deployment.name,
    slug: deployment.slug,
    ...(deployment.description !== null && deployment.description !== undefined
      ? { description: deployment.description }
      : {}),
    ...(deployment.resourceSelector !== null && deployment.resourceSelector !== undefined
      ? { resourceSelector: deployment.resourceSelector }
      : {}),
    jobAgentSelector: deployment.jobAgentSelector ?? '',
    jobAgentConfig: redactConfig(deployment.jobAgentConfig ?? {}),
    metadata: deployment.metadata,
  };
}

function toJobEnvironment(environment: Environment): z.infer<typeof JobEnvironmentSchema> {
  return {
    id: environment.id,
    name: environment.name,
    ...(environment.description !== null && environment.description !== undefined
      ? { description: environment.description }
      : {}),
    ...(environment.resourceSelector !== null && environment.resourceSelector !== undefined
      ? { resourceSelector: environment.resourceSelector }
      : {}),
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
    ...(resource.providerId !== null && resource.providerId !== undefined
      ? { providerId: resource.providerId }
      : {}),
    createdAt: iso(resource.createdAt),
    updatedAt: iso(resource.updatedAt),
    ...(resource.deletedAt ? { deletedAt: iso(resource.deletedAt) } : {}),
  };
}

export function toJobWithRelease(found: JobWithRelease | { job: Job }): z.infer<typeof JobWithReleaseSchema> {
  if (!('release' in found)) return { job: toJob(found.job) };
  const { job, release } = found;
  return {
    job: toJob(job),
    release: {
      ...toRelease(release),
      version: toJobVersion(found.version),
      ...releaseVariables(job),
      releaseTarget: {
        resourceId: release.resourceId,
        environmentId: release.environmentId,
        deploymentId: release.deploymentId,
      },
    },
    deployment: toJobDeployment(found.deployment),
    environment: toJobEnvironment(found.environment),
    resource: toJobResource(found.resource),
  };
}
