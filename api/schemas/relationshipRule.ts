import type { RelationshipRule } from '../../db/entities';
import { celExpression } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import { RELATIONSHIP_REFERENCE } from '../../domain/relationships';
import { isBuiltinReference } from '../../domain/variables';
import { Description, iso, MetadataSchema, Name, Timestamp } from './common';
import { z } from './zod';

export const RelationshipRuleSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    description: z.string().optional(),
    reference: z.string(),
    cel: z.string(),
    metadata: MetadataSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('RelationshipRule');

export const RelationshipRuleBody = z
  .object({
    name: Name,
    description: Description,
    reference: displayText(
      z.string().regex(RELATIONSHIP_REFERENCE, 'a letter, then letters, digits, "_" or "-" (at most 63)'),
      'single',
    )
      .refine((reference) => !isBuiltinReference(reference), 'names a record a reference reaches directly')
      .openapi({
        description: 'What variable values write as `{reference, path}` to read the related resource',
      }),
    cel: celExpression('relationship').openapi({
      description:
        'CEL over `from` (the release target’s resource) and `to` (another resource of the workspace)',
    }),
    metadata: MetadataSchema.default({}),
  })
  .openapi('RelationshipRuleInput');

export const RelationshipRuleParams = z.object({ workspaceId: z.uuid(), relationshipRuleId: z.uuid() });

export function toRelationshipRule(rule: RelationshipRule): z.infer<typeof RelationshipRuleSchema> {
  return {
    id: rule.id,
    workspaceId: rule.workspaceId,
    name: rule.name,
    ...(rule.description ? { description: rule.description } : {}),
    reference: rule.reference,
    cel: rule.cel,
    metadata: rule.metadata,
    createdAt: iso(rule.createdAt),
    updatedAt: iso(rule.updatedAt),
  };
}
