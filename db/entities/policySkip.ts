import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { createdAt, workspaceScoped } from './common';

/** One version let past one policy rule on a scope, until it expires (domain/policySkips.ts). */
export const PolicySkipSchema = defineEntity({
  name: 'PolicySkip',
  tableName: 'policy_skip',
  properties: (p) => ({
    ...workspaceScoped(),
    ruleId: p.uuid(),
    versionId: p.uuid(),
    environmentId: p.uuid().nullable(),
    resourceId: p.uuid().nullable(),
    reason: p.text(),
    expiresAt: p.datetime(),
    createdById: p.text(),
    createdByName: p.text(),
    ...createdAt(),
  }),
});
export type PolicySkip = InferEntity<typeof PolicySkipSchema>;
