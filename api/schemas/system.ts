import type { System } from '../../db/entities';
import type { SystemWithLinks } from '../../application/systems';
import { Description, ifPresent, iso, MetadataSchema, Name, Slug, Timestamp } from './common';
import { DeploymentSchema, toDeployment } from './deployment';
import { EnvironmentSchema, toEnvironment } from './environment';
import { z } from './zod';

export const SystemSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    slug: z.string(),
    description: z.string().optional(),
    metadata: MetadataSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('System');

export const SystemWithLinksSchema = SystemSchema.extend({
  deployments: z.array(DeploymentSchema),
  environments: z.array(EnvironmentSchema),
}).openapi('SystemWithLinks');

export const SystemBody = z
  .object({
    name: Name,
    slug: Slug.optional().openapi({ description: 'Defaults to a slug of the name' }),
    description: Description,
    metadata: MetadataSchema.optional(),
  })
  .openapi('SystemInput');

export const SystemParams = z.object({ workspaceId: z.uuid(), systemId: z.uuid() });
export const SystemDeploymentParams = SystemParams.extend({ deploymentId: z.uuid() });
export const SystemEnvironmentParams = SystemParams.extend({ environmentId: z.uuid() });

export const SystemDeploymentLinkSchema = z
  .object({ systemId: z.uuid(), deploymentId: z.uuid() })
  .openapi('SystemDeploymentLink');
export const SystemEnvironmentLinkSchema = z
  .object({ systemId: z.uuid(), environmentId: z.uuid() })
  .openapi('SystemEnvironmentLink');

export function toSystem(system: System): z.infer<typeof SystemSchema> {
  return {
    id: system.id,
    workspaceId: system.workspaceId,
    name: system.name,
    slug: system.slug,
    ...ifPresent('description', system.description),
    metadata: system.metadata,
    createdAt: iso(system.createdAt),
    updatedAt: iso(system.updatedAt),
  };
}

/** An environment as Ctrlplane shows it: with the systems it is linked to (and their ids). */
export const EnvironmentWithSystemsSchema = EnvironmentSchema.extend({
  systems: z.array(SystemSchema),
}).openapi('EnvironmentWithSystems');

export function toEnvironmentWithSystems(
  environment: Parameters<typeof toEnvironment>[0],
  systems: System[],
): z.infer<typeof EnvironmentWithSystemsSchema> {
  return {
    ...toEnvironment(
      environment,
      systems.map((system) => system.id),
    ),
    systems: systems.map(toSystem),
  };
}

export function toSystemWithLinks({ system, deployments, environments, systemIds }: SystemWithLinks) {
  return {
    ...toSystem(system),
    deployments: deployments.map((deployment) =>
      toDeployment(deployment, systemIds.get(deployment.id) ?? []),
    ),
    environments: environments.map((environment) =>
      toEnvironment(environment, systemIds.get(environment.id) ?? []),
    ),
  };
}
