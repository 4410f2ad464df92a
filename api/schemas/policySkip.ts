import type { PolicySkip } from '../../db/entities';
import { displayText } from '../../domain/displayText';
import { ifPresent, iso, pageOf, pageQuery, Timestamp, WorkspaceParams } from './common';
import { z } from './zod';

export const PolicySkipBody = z
  .object({
    ruleId: z.uuid().openapi({ description: "The id of the rule to pass: one of a policy's gate rules" }),
    versionId: z.uuid().openapi({ description: 'The version whose releases pass it' }),
    environmentId: z.uuid().optional().openapi({ description: 'Only in this environment' }),
    resourceId: z.uuid().optional().openapi({ description: 'Only on this resource' }),
    reason: displayText(z.string().trim().min(1).max(2000), 'multi'),
    expiresAt: Timestamp.optional().openapi({
      description:
        'When the skip stops counting: in the future and within the maximum life (FLIGHTDECK_POLICY_SKIP_MAX_SECONDS); the default life (FLIGHTDECK_POLICY_SKIP_DEFAULT_SECONDS) when absent',
    }),
  })
  .openapi('PolicySkipInput');

export const PolicySkipSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    ruleId: z.uuid(),
    versionId: z.uuid(),
    environmentId: z.uuid().optional(),
    resourceId: z.uuid().optional(),
    reason: z.string(),
    expiresAt: Timestamp,
    active: z.boolean().openapi({ description: 'Not expired yet' }),
    createdBy: z
      .object({ id: z.string(), name: z.string() })
      .openapi({ description: 'The API key that created it' }),
    createdAt: Timestamp,
  })
  .openapi('PolicySkip');

export const PolicySkipPageSchema = pageOf(PolicySkipSchema, 'PolicySkipPage');

export const PolicySkipListQuery = pageQuery().extend({
  versionId: z.uuid().optional(),
  ruleId: z.uuid().optional(),
  active: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional()
    .openapi({ type: 'boolean', description: 'Only unexpired (true) or expired (false) skips' }),
});

export const PolicySkipParams = WorkspaceParams.extend({ policySkipId: z.uuid() });

export function toPolicySkip(skip: PolicySkip, now = new Date()): z.infer<typeof PolicySkipSchema> {
  return {
    id: skip.id,
    workspaceId: skip.workspaceId,
    ruleId: skip.ruleId,
    versionId: skip.versionId,
    ...ifPresent('environmentId', skip.environmentId),
    ...ifPresent('resourceId', skip.resourceId),
    reason: skip.reason,
    expiresAt: iso(skip.expiresAt),
    active: skip.expiresAt.getTime() > now.getTime(),
    createdBy: { id: skip.createdById, name: skip.createdByName },
    createdAt: iso(skip.createdAt),
  };
}
