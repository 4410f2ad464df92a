import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { PolicyRule } from '../../domain/policies';
import { timestamps, workspaceScoped } from './common';

export const PolicySchema = defineEntity({
  name: 'Policy',
  tableName: 'policy',
  uniques: [{ properties: ['workspaceId', 'name'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    description: p.text().nullable(),
    selector: p.text(),
    priority: p.integer(),
    enabled: p.boolean(),
    metadata: p.json<Record<string, string>>(),
    rules: p.json<PolicyRule[]>(),
    ...timestamps(),
  }),
});
export type Policy = InferEntity<typeof PolicySchema>;
