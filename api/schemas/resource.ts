import type { Resource, ResourceVariable } from '../../db/entities';
import type { ResourceVariableInput } from '../../application/resources';
import { showValue } from '../../db/sensitiveValues';
import { displayText } from '../../domain/displayText';
import { isRedactedMarker } from '../../domain/sensitive';
import { ifPresent, iso, isoOrNull, JsonObjectSchema, MetadataSchema, Name, Timestamp } from './common';
import { z } from './zod';

/** A JSON value other than null: a variable that has no value is left out. */
const Literal = z.union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), JsonObjectSchema]);

const VariableEntry = z
  .object({
    key: z.string().min(1).max(255),
    value: Literal,
    sensitive: z.boolean().default(false),
  })
  .openapi('ResourceVariableInput');

function uniqueKeys(variables: ResourceVariableInput[], ctx: z.RefinementCtx) {
  const seen = new Set<string>();
  variables.forEach((variable, index) => {
    if (seen.has(variable.key))
      ctx.addIssue({ code: 'custom', path: [index, 'key'], message: 'duplicate key' });
    seen.add(variable.key);
  });
}

const VariableList = z.array(VariableEntry).max(500).superRefine(uniqueKeys);

/** Variables in a request: the spec's array of `{key, value, sensitive}`, or an object of key → value. */
const VariablesInput = z.union([
  VariableList,
  z
    .record(z.string().min(1).max(255), Literal)
    .transform((object) => Object.entries(object).map(([key, value]) => ({ key, value, sensitive: false }))),
]);

/**
 * Ctrlplane's bulk variable update: key → value; a value `{"sensitive": true}` keeps the stored
 * sensitive value (a new sensitive value is written with the resource, as `{key, value, sensitive}`).
 */
export const ResourceVariablesBody = z
  .record(z.string().min(1).max(255), Literal)
  .refine((object) => Object.keys(object).length <= 500, 'at most 500 variables')
  .transform((object) =>
    Object.entries(object).map(([key, value]) => ({ key, value, sensitive: isRedactedMarker(value) })),
  )
  .openapi('ResourceVariablesInput');

const Identifier = displayText(z.string().min(1).max(1000), 'single');
const Field = displayText(z.string().min(1).max(255), 'single');

export const ResourceSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    version: z.string(),
    kind: z.string(),
    identifier: z.string(),
    config: JsonObjectSchema,
    metadata: MetadataSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    deletedAt: Timestamp.nullable().openapi({ description: 'When it was deleted; null while it is live' }),
    workspaceId: z.uuid(),
    providerId: z
      .uuid()
      .optional()
      .openapi({ description: 'The resource provider that owns it; absent when none' }),
    variables: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'Key → value; a sensitive value shows as {"sensitive": true}' }),
  })
  .openapi('Resource');

export const PatchedResourceSchema = ResourceSchema.extend({
  message: z.literal('Resource updated successfully'),
}).openapi('PatchedResource');

export const UpsertResourceBody = z
  .object({
    name: Name,
    version: Field,
    kind: Field,
    config: JsonObjectSchema.optional(),
    metadata: MetadataSchema.optional(),
    variables: VariablesInput.optional(),
  })
  .openapi('UpsertResource');

/**
 * One resource of a provider's set. The timestamps of Ctrlplane's provider resource (`createdAt`,
 * which `ctrlc` sends as `0001-01-01T00:00:00Z`, `updatedAt`, `deletedAt`, `lockedAt`) are
 * accepted and ignored: the store keeps its own.
 */
export const ProviderResourceEntry = UpsertResourceBody.extend({
  identifier: Identifier,
  createdAt: Timestamp.optional(),
  updatedAt: Timestamp.nullish(),
  deletedAt: Timestamp.nullish(),
  lockedAt: Timestamp.nullish(),
})
  .transform(
    ({ createdAt: _created, updatedAt: _updated, deletedAt: _deleted, lockedAt: _locked, ...resource }) =>
      resource,
  )
  .openapi('ProviderResource');

/** docs/behaviour.md "Resource": PATCH /v1/resources/{resourceId}, every field optional. */
export const PatchResourceBody = z
  .object({
    name: Name.optional(),
    version: Field.optional(),
    kind: Field.optional(),
    identifier: Identifier.optional(),
    workspaceId: z.uuid().optional(),
    metadata: MetadataSchema.optional(),
    config: JsonObjectSchema.optional(),
    variables: VariableList.optional(),
  })
  .openapi('PatchResource');

export const ResourceParams = z.object({ workspaceId: z.uuid(), resourceId: z.uuid() });
export const ResourceIdentifierParams = z.object({ workspaceId: z.uuid(), identifier: Identifier });

export function toResource(
  resource: Resource,
  variables: ResourceVariable[],
): z.infer<typeof ResourceSchema> {
  return {
    id: resource.id,
    name: resource.name,
    version: resource.version,
    kind: resource.kind,
    identifier: resource.identifier,
    config: resource.config,
    metadata: resource.metadata,
    createdAt: iso(resource.createdAt),
    updatedAt: iso(resource.updatedAt),
    deletedAt: isoOrNull(resource.deletedAt),
    workspaceId: resource.workspaceId,
    ...ifPresent('providerId', resource.providerId),
    variables: Object.fromEntries(variables.map((v) => [v.key, showValue(v.value, v.sensitive)])),
  };
}
