import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { VariableReference } from '../../domain/variables';
import { timestamps, workspaceScoped } from './common';

/** Ctrlplane's variable set: values for the release targets its selector matches. */
export const VariableSetSchema = defineEntity({
  name: 'VariableSet',
  tableName: 'variable_set',
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    description: p.text(),
    /** CEL over `resource`, `deployment` and `environment`. */
    selector: p.text(),
    priority: p.integer(),
    ...timestamps(),
  }),
});
export type VariableSet = InferEntity<typeof VariableSetSchema>;

/** One key of a set: a literal (a sealed string when sensitive) or a reference. */
export const VariableSetVariableSchema = defineEntity({
  name: 'VariableSetVariable',
  tableName: 'variable_set_variable',
  properties: (p) => ({
    variableSetId: p.uuid().primary(),
    key: p.text().primary(),
    value: p.json<unknown>().nullable(),
    reference: p.json<VariableReference>().nullable(),
    sensitive: p.boolean(),
  }),
});
export type VariableSetVariable = InferEntity<typeof VariableSetVariableSchema>;
