import type { DeploymentVariable, DeploymentVariableValue } from '../../db/entities';
import type { VariableWithValues } from '../../application/variables';
import { showValue } from '../../db/sensitiveValues';
import { celExpression } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import { RELATIONSHIP_REFERENCE } from '../../domain/relationships';
import { unreadableReference, VARIABLE_REFERENCES, type VariableReference } from '../../domain/variables';
import { Description, ifPresent, iso, JsonObjectSchema, Timestamp } from './common';
import { z } from './zod';

/**
 * Variables accept the provider's spellings (`default_value`, `literal_value`, `reference_value`,
 * `resource_selector`) as well as camelCase; responses use camelCase.
 */

/** A JSON value other than null: a variable without a value has no value row, or no default. */
const Literal = z
  .union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), JsonObjectSchema])
  .openapi('VariableLiteral');

/** What a reference names: one of the release's records, or a relationship rule's reference name. */
export const ReferenceName = displayText(
  z
    .string()
    .regex(
      RELATIONSHIP_REFERENCE,
      'a record (workspace, deployment, environment, resource, version) or a relationship name',
    ),
  'single',
).openapi({
  description: `One of ${VARIABLE_REFERENCES.join(', ')}, or the reference name of a relationship rule (the related resource)`,
});

/** A reference's path may not lead into job agent configurations (domain/variables.ts). */
export function refuseUnreadablePath(reference: VariableReference, ctx: z.RefinementCtx): void {
  const refused = unreadableReference(reference);
  if (refused) ctx.addIssue({ code: 'custom', path: ['path'], message: refused });
}

const Reference = z
  .object({
    reference: ReferenceName,
    path: z.array(z.string().min(1)).min(1).max(20),
  })
  .superRefine(refuseUnreadablePath)
  .openapi('VariableReference', {
    description:
      'A field of a related record, e.g. {reference: "resource", path: ["metadata", "region"]}; never inside an agent configuration (deployment.jobAgents, deployment.jobAgentConfig, version.jobAgentConfig)',
  });

const Key = z.string().min(1).max(255);

const VariableFields = z.object({
  key: Key,
  description: Description,
  defaultValue: Literal.optional(),
  default_value: Literal.optional(),
  sensitive: z.boolean().optional(),
});

function normalizeVariable<T extends z.infer<typeof VariableFields>>({
  default_value,
  defaultValue,
  ...rest
}: T) {
  return { ...rest, defaultValue: defaultValue ?? default_value };
}

export const VariableBody = VariableFields.transform(normalizeVariable).openapi('DeploymentVariableInput');

/** Ctrlplane's `/deployment-variables/{id}`: the deployment is named in the body. */
export const VariableAliasBody = VariableFields.extend({ deploymentId: z.uuid() })
  .transform(normalizeVariable)
  .openapi('DeploymentVariableAliasInput');

const ValueFields = z.object({
  priority: z.number().int().min(-1_000_000).max(1_000_000).default(0),
  value: Literal.optional(),
  literal_value: Literal.optional(),
  reference_value: Reference.optional(),
  referenceValue: Reference.optional(),
  resourceSelector: celExpression('resource').nullish(),
  resource_selector: celExpression('resource').nullish(),
  sensitive: z.boolean().optional(),
});

function checkOneValue(body: z.infer<typeof ValueFields>, ctx: z.RefinementCtx) {
  const given = (['value', 'literal_value', 'reference_value', 'referenceValue'] as const).filter(
    (k) => body[k] !== undefined,
  );
  if (given.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      path: given.length === 0 ? ['value'] : [given[1]!],
      message: 'give exactly one of value (literal_value) or reference_value',
    });
  }
}

function normalizeValue<T extends z.infer<typeof ValueFields>>(body: T) {
  const {
    value,
    literal_value,
    reference_value,
    referenceValue,
    resource_selector,
    resourceSelector,
    ...rest
  } = body;
  const reference = reference_value ?? referenceValue;
  const selector = resourceSelector ?? resource_selector ?? null;
  return reference
    ? { ...rest, resourceSelector: selector, reference }
    : { ...rest, resourceSelector: selector, value: value !== undefined ? value : literal_value };
}

export const VariableValueBody = ValueFields.superRefine(checkOneValue)
  .transform(normalizeValue)
  .openapi('DeploymentVariableValueInput');

/** Ctrlplane's `/deployment-variable-values/{id}`: the variable is named in the body. */
export const VariableValueAliasBody = ValueFields.extend({ deploymentVariableId: z.uuid() })
  .superRefine(checkOneValue)
  .transform(normalizeValue)
  .openapi('DeploymentVariableValueAliasInput');

export const VariableSchema = z
  .object({
    id: z.uuid(),
    deploymentId: z.uuid(),
    key: z.string(),
    description: z.string().optional(),
    defaultValue: z
      .unknown()
      .openapi({ description: 'null when there is none; {"sensitive": true} when sensitive' }),
    sensitive: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('DeploymentVariable');

export const VariableValueSchema = z
  .object({
    id: z.uuid(),
    deploymentVariableId: z.uuid(),
    priority: z.number().int(),
    value: z.unknown().optional(),
    referenceValue: Reference.optional(),
    resourceSelector: z
      .string()
      .optional()
      .openapi({ description: 'Absent: the value applies to every resource' }),
    sensitive: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('DeploymentVariableValue');

export const VariableWithValuesSchema = z
  .object({ variable: VariableSchema, values: z.array(VariableValueSchema) })
  .openapi('DeploymentVariableWithValues');

export const DeploymentVariableParams = z.object({
  workspaceId: z.uuid(),
  deploymentId: z.uuid(),
  variableId: z.uuid(),
});
export const DeploymentVariableValueParams = DeploymentVariableParams.extend({ valueId: z.uuid() });
export const VariableParams = z.object({ workspaceId: z.uuid(), variableId: z.uuid() });
export const ValueParams = z.object({ workspaceId: z.uuid(), valueId: z.uuid() });

export function toVariable(variable: DeploymentVariable): z.infer<typeof VariableSchema> {
  return {
    id: variable.id,
    deploymentId: variable.deploymentId,
    key: variable.key,
    ...ifPresent('description', variable.description),
    defaultValue:
      variable.defaultValue === null ? null : showValue(variable.defaultValue, variable.sensitive),
    sensitive: variable.sensitive,
    createdAt: iso(variable.createdAt),
    updatedAt: iso(variable.updatedAt),
  };
}

export function toVariableValue(value: DeploymentVariableValue): z.infer<typeof VariableValueSchema> {
  return {
    id: value.id,
    deploymentVariableId: value.variableId,
    priority: value.priority,
    ...(value.reference
      ? { referenceValue: value.reference }
      : { value: showValue(value.value, value.sensitive) }),
    ...ifPresent('resourceSelector', value.resourceSelector),
    sensitive: value.sensitive,
    createdAt: iso(value.createdAt),
    updatedAt: iso(value.updatedAt),
  };
}

export function toVariableWithValues({ variable, values }: VariableWithValues) {
  return { variable: toVariable(variable), values: values.map(toVariableValue) };
}
