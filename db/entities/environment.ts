import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

export const EnvironmentSchema = defineEntity({
  name: 'Environment',
  tableName: 'environment',
  uniques: [{ properties: ['workspaceId', 'name'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    description: p.text().nullable(),
    resourceSelector: p.text().nullable(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type Environment = InferEntity<typeof EnvironmentSchema>;
