import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

/** Ctrlplane's relationship rule: `reference` names the resource `cel` relates to a target's resource. */
export const RelationshipRuleSchema = defineEntity({
  name: 'RelationshipRule',
  tableName: 'relationship_rule',
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    description: p.text().nullable(),
    reference: p.text(),
    /** CEL over `from` (the target's resource) and `to` (a candidate resource). */
    cel: p.text(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type RelationshipRule = InferEntity<typeof RelationshipRuleSchema>;
