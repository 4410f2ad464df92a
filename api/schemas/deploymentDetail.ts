import { DeploymentSchema } from './deployment';
import { SystemSchema } from './system';
import { VariableWithValuesSchema } from './variable';
import { z } from './zod';

/**
 * A deployment read by id: its fields (docs/behaviour.md "Deployment"), and Ctrlplane's
 * `DeploymentWithVariablesAndSystems` beside them — the same record as `deployment`, its `systems`
 * and its `variables` with their values — so clients of either read what they expect.
 */
export const DeploymentDetailSchema = DeploymentSchema.extend({
  deployment: DeploymentSchema,
  systems: z.array(SystemSchema),
  variables: z.array(VariableWithValuesSchema),
}).openapi('DeploymentWithVariablesAndSystems');

/** A deployment in a list: its fields, and Ctrlplane's `DeploymentAndSystems` (`deployment`, `systems`) beside them. */
export const DeploymentListItemSchema = DeploymentSchema.extend({
  deployment: DeploymentSchema,
  systems: z.array(SystemSchema),
}).openapi('DeploymentAndSystems');
