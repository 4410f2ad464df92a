import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

export const ResourceSchema = defineEntity({
  name: 'Resource',
  tableName: 'resource',
  properties: (p) => ({
    ...workspaceScoped(),
    identifier: p.text(),
    name: p.text(),
    version: p.text(),
    kind: p.text(),
    config: p.json<Record<string, unknown>>(),
    metadata: p.json<Record<string, string>>(),
    providerId: p.uuid().nullable(),
    ...timestamps(),
    deletedAt: p.datetime().nullable(),
  }),
});
export type Resource = InferEntity<typeof ResourceSchema>;

/** A variable of one resource; a sensitive value is stored sealed (db/secrets.ts). */
export const ResourceVariableSchema = defineEntity({
  name: 'ResourceVariable',
  tableName: 'resource_variable',
  properties: (p) => ({
    resourceId: p.uuid().primary(),
    key: p.text().primary(),
    value: p.json<unknown>(),
    sensitive: p.boolean(),
  }),
});
export type ResourceVariable = InferEntity<typeof ResourceVariableSchema>;
