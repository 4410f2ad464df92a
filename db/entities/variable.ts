import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { VariableReference } from '../../domain/variables';
import { timestamps, workspaceScoped } from './common';

export const DeploymentVariableSchema = defineEntity({
  name: 'DeploymentVariable',
  tableName: 'deployment_variable',
  uniques: [{ properties: ['deploymentId', 'key'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    deploymentId: p.uuid(),
    key: p.text(),
    description: p.text().nullable(),
    /** A JSON literal, or a sealed string when the variable is sensitive. */
    defaultValue: p.json<unknown>().nullable(),
    sensitive: p.boolean(),
    ...timestamps(),
  }),
});
export type DeploymentVariable = InferEntity<typeof DeploymentVariableSchema>;

/** One candidate value of a variable: a literal or a reference, chosen by selector and priority. */
export const DeploymentVariableValueSchema = defineEntity({
  name: 'DeploymentVariableValue',
  tableName: 'deployment_variable_value',
  properties: (p) => ({
    ...workspaceScoped(),
    variableId: p.uuid(),
    priority: p.integer(),
    value: p.json<unknown>().nullable(),
    reference: p.json<VariableReference>().nullable(),
    resourceSelector: p.text().nullable(),
    sensitive: p.boolean(),
    ...timestamps(),
  }),
});
export type DeploymentVariableValue = InferEntity<typeof DeploymentVariableValueSchema>;
