import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { createdAt, timestamps, workspaceScoped } from './common';

export const SystemSchema = defineEntity({
  name: 'System',
  tableName: 'system',
  uniques: [{ properties: ['workspaceId', 'slug'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    slug: p.text(),
    description: p.text().nullable(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type System = InferEntity<typeof SystemSchema>;

/** A deployment belongs to a system through this link (the provider's separate link resource). */
export const SystemDeploymentSchema = defineEntity({
  name: 'SystemDeployment',
  tableName: 'system_deployment',
  properties: (p) => ({
    systemId: p.uuid().primary(),
    deploymentId: p.uuid().primary(),
    workspaceId: p.uuid(),
    ...createdAt(),
  }),
});
export type SystemDeployment = InferEntity<typeof SystemDeploymentSchema>;

export const SystemEnvironmentSchema = defineEntity({
  name: 'SystemEnvironment',
  tableName: 'system_environment',
  properties: (p) => ({
    systemId: p.uuid().primary(),
    environmentId: p.uuid().primary(),
    workspaceId: p.uuid(),
    ...createdAt(),
  }),
});
export type SystemEnvironment = InferEntity<typeof SystemEnvironmentSchema>;
