import type { Environment } from '../../db/entities';
import { celExpression } from '../../domain/celSchema';
import {
  Description,
  ifPresent,
  iso,
  MetadataSchema,
  Name,
  SelectorWarningsSchema,
  Timestamp,
} from './common';
import { z } from './zod';

export const EnvironmentSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    description: z.string().optional(),
    resourceSelector: z
      .string()
      .optional()
      .openapi({ description: 'Absent: the environment includes no resource' }),
    metadata: MetadataSchema,
    systemIds: z.array(z.uuid()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    selectorWarnings: SelectorWarningsSchema.optional(),
  })
  .openapi('Environment');

export const EnvironmentBody = z
  .object({
    name: Name,
    description: Description,
    resourceSelector: celExpression('resource').nullish().openapi({
      description: 'CEL over `resource`: the resources this environment includes (none when absent)',
      example: 'resource.metadata["env"] == "prod"',
    }),
    metadata: MetadataSchema.optional(),
  })
  .openapi('EnvironmentInput');

export const EnvironmentParams = z.object({ workspaceId: z.uuid(), environmentId: z.uuid() });

export function toEnvironment(
  environment: Environment,
  systemIds: string[],
): z.infer<typeof EnvironmentSchema> {
  return {
    id: environment.id,
    workspaceId: environment.workspaceId,
    name: environment.name,
    ...ifPresent('description', environment.description),
    ...ifPresent('resourceSelector', environment.resourceSelector),
    metadata: environment.metadata,
    systemIds,
    createdAt: iso(environment.createdAt),
    updatedAt: iso(environment.updatedAt),
  };
}
