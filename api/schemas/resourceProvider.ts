import type { ResourceProvider } from '../../db/entities';
import { iso, MetadataSchema, Name, Timestamp } from './common';
import { ProviderResourceEntry } from './resource';
import { z } from './zod';

/** Largest set one request may carry: a bigger inventory is split across providers. */
export const MAX_PROVIDER_SET = 100_000;

/**
 * The set's body: room for `MAX_PROVIDER_SET` resources of about 600 bytes and 40 JSON values each,
 * whatever the configured limit of other bodies.
 */
export const PROVIDER_SET_BODY = { limit: '64mb', maxNodes: 40 * MAX_PROVIDER_SET };

export const ResourceProviderSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    metadata: MetadataSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('ResourceProvider');

export const UpsertResourceProviderBody = z
  .object({
    id: z
      .union([z.literal(''), z.uuid()])
      .optional()
      .transform((id) => id || undefined)
      .openapi({
        description:
          'The id a new provider gets (empty or left out: one is generated); a provider of that name keeps its own',
      }),
    name: Name,
    metadata: MetadataSchema.optional().openapi({ description: 'Replaces the metadata when given' }),
  })
  .openapi('UpsertResourceProvider');

export const ResourceProviderNameParams = z.object({ workspaceId: z.uuid(), name: Name });
export const ResourceProviderParams = z.object({ workspaceId: z.uuid(), providerId: z.uuid() });

export const SetProviderResourcesBody = z
  .object({
    resources: z
      .array(ProviderResourceEntry)
      .max(MAX_PROVIDER_SET)
      .superRefine((resources, ctx) => {
        const seen = new Set<string>();
        resources.forEach((resource, index) => {
          if (seen.has(resource.identifier))
            ctx.addIssue({ code: 'custom', path: [index, 'identifier'], message: 'duplicate identifier' });
          seen.add(resource.identifier);
        });
      }),
  })
  .openapi('SetProviderResources');

export const ProviderSetAcceptedSchema = z
  .object({
    ok: z.literal(true),
    method: z.literal('set'),
    created: z.number().int().openapi({ description: 'Resources the set created' }),
    replaced: z.number().int().openapi({ description: 'Resources it replaced (ids kept)' }),
    deleted: z.number().int().openapi({ description: "The provider's resources it left out, now deleted" }),
  })
  .openapi('ProviderSetAccepted');

export function toResourceProvider(provider: ResourceProvider): z.infer<typeof ResourceProviderSchema> {
  return {
    id: provider.id,
    workspaceId: provider.workspaceId,
    name: provider.name,
    metadata: provider.metadata,
    createdAt: iso(provider.createdAt),
    updatedAt: iso(provider.updatedAt),
  };
}
