import type { ResourceVariable } from '../../db/entities';
import { showValue } from '../../db/sensitiveValues';
import { displayText } from '../../domain/displayText';
import { DeploymentSchema } from './deployment';
import { JsonObjectSchema, MetadataSchema, Name, pageQuery } from './common';
import { EnvironmentWithSystemsSchema, SystemSchema } from './system';
import { z } from './zod';

const Identifier = displayText(z.string().min(1).max(1000), 'single');
const Field = displayText(z.string().min(1).max(255), 'single');

/** A resource as it would be written, for the preview of its release targets. */
export const ResourcePreviewBody = z
  .object({
    name: Name,
    version: Field,
    kind: Field,
    identifier: Identifier,
    config: JsonObjectSchema.default({}),
    metadata: MetadataSchema.default({}),
  })
  .openapi('ResourcePreviewInput');

export const TargetPreviewSchema = z
  .object({ system: SystemSchema, deployment: DeploymentSchema, environment: EnvironmentWithSystemsSchema })
  .openapi('ReleaseTargetPreview');

export const ResourceVariableItemSchema = z
  .object({
    resourceId: z.uuid(),
    key: z.string(),
    value: z.unknown().openapi({ description: 'The value; a sensitive one shows as {"sensitive": true}' }),
  })
  .openapi('ResourceVariable');

export function toResourceVariable(variable: ResourceVariable): z.infer<typeof ResourceVariableItemSchema> {
  return {
    resourceId: variable.resourceId,
    key: variable.key,
    value: showValue(variable.value, variable.sensitive),
  };
}

const Values = (item: z.ZodType<string>) => z.array(item).min(1).max(1000).optional();

/** Ctrlplane's resource search filters; every filter given narrows the result. */
export const ResourceSearchBody = z
  .object({
    identifiers: Values(Identifier),
    kinds: Values(Field),
    versions: Values(Field),
    providerIds: Values(z.uuid()),
    metadata: MetadataSchema.optional().openapi({ description: 'Exact key/value matches' }),
    query: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'Text within the name or identifier' }),
    sortBy: z.enum(['createdAt', 'updatedAt', 'name', 'kind']).optional(),
    order: z.enum(['asc', 'desc']).default('asc'),
    limit: z.number().int().min(1).max(1000).default(500),
    offset: z.number().int().min(0).max(1_000_000).default(0),
  })
  .openapi('ResourceSearch');

export const ResourceTargetParams = z.object({
  workspaceId: z.uuid(),
  resourceIdentifier: Identifier,
  deploymentId: z.uuid(),
});

export const PreviewQuery = pageQuery();
