import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

/** A source of resources (a scanner, `ctrlc sync`): its sets decide which resources it owns. */
export const ResourceProviderSchema = defineEntity({
  name: 'ResourceProvider',
  tableName: 'resource_provider',
  uniques: [{ properties: ['workspaceId', 'name'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type ResourceProvider = InferEntity<typeof ResourceProviderSchema>;
