import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { createdAt } from './common';

export const WorkspaceSchema = defineEntity({
  name: 'Workspace',
  tableName: 'workspace',
  properties: (p) => ({
    id: p.uuid().primary(),
    name: p.text(),
    slug: p.text().unique(),
    ...createdAt(),
  }),
});
export type Workspace = InferEntity<typeof WorkspaceSchema>;
