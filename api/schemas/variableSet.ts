import type { VariableSet, VariableSetVariable } from '../../db/entities';
import type { VariableSetVariableInput, VariableSetWithVariables } from '../../application/variableSets';
import { showValue } from '../../db/sensitiveValues';
import { celExpression } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import { isRedactedMarker } from '../../domain/sensitive';
import { iso, JsonObjectSchema, Name, Timestamp } from './common';
import { ReferenceName, refuseUnreadablePath } from './variable';
import { z } from './zod';

/**
 * Ctrlplane's variable sets. A variable's `value` takes Ctrlplane's forms: a string, number or
 * boolean; an object as `{"object": {...}}` (a bare object or an array is read as itself); a
 * reference `{"reference", "path"}`. Responses write objects as `{"object": {...}}`, so what a GET
 * shows can be sent back as it is.
 */

export const MAX_VARIABLES_PER_SET = 500;

const Reference = z
  .object({
    reference: ReferenceName,
    path: z.array(z.string().min(1).max(255)).min(1).max(20),
  })
  .superRefine(refuseUnreadablePath);

const hasExactly = (value: object, keys: string[]) =>
  Object.keys(value).length === keys.length && keys.every((key) => key in value);

type ReadValue = { value: unknown } | { reference: z.infer<typeof Reference> };

type Report = (message: string, path?: PropertyKey[]) => void;

/** A value as sent: which of Ctrlplane's forms it is, and what it holds. */
function readValue(value: unknown, report: Report): ReadValue {
  if (value === null) {
    report('null is not a value; leave the key out instead');
    return { value };
  }
  if (typeof value !== 'object' || Array.isArray(value)) return { value };
  if (hasExactly(value, ['reference', 'path'])) {
    const reference = Reference.safeParse(value);
    if (reference.success) return { reference: reference.data };
    for (const issue of reference.error.issues) report(issue.message, issue.path);
    return { value };
  }
  if ('valueHash' in value) {
    report(
      'a hashed sensitive value cannot be resolved into a job; send the value itself with "sensitive": true',
    );
    return { value };
  }
  const object = (value as { object?: unknown }).object;
  if (
    hasExactly(value, ['object']) &&
    typeof object === 'object' &&
    object !== null &&
    !Array.isArray(object)
  )
    return { value: object };
  return { value };
}

const SetVariableInput = z
  .object({
    key: z.string().min(1).max(255),
    value: z
      .union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), JsonObjectSchema, z.null()])
      .openapi({
        description:
          'A string, number or boolean; an object as {"object": {...}}; a reference {"reference": "resource", ' +
          '"path": ["metadata", "region"]} into workspace, deployment, environment, resource or version; ' +
          '{"sensitive": true} keeps the sensitive value stored for this key',
      }),
    sensitive: z.boolean().optional().openapi({
      description: 'Store the value encrypted and show it as {"sensitive": true}',
    }),
  })
  .transform(({ key, value, sensitive }, ctx): VariableSetVariableInput => {
    const read = readValue(value, (message, path = []) =>
      ctx.addIssue({ code: 'custom', path: ['value', ...path], message }),
    );
    if ('reference' in read) return { key, reference: read.reference, sensitive: sensitive ?? false };
    if (isRedactedMarker(value)) {
      if (sensitive === false) {
        ctx.addIssue({
          code: 'custom',
          path: ['value'],
          message:
            '{"sensitive": true} keeps a stored sensitive value; a value that is not sensitive is sent as it is',
        });
      }
      return { key, value, sensitive: true };
    }
    return { key, value: read.value, sensitive: sensitive ?? false };
  })
  .openapi('VariableSetVariableInput');

const Variables = z
  .array(SetVariableInput)
  .max(MAX_VARIABLES_PER_SET)
  .superRefine((variables, ctx) => {
    const seen = new Set<string>();
    variables.forEach((variable, index) => {
      if (seen.has(variable.key))
        ctx.addIssue({ code: 'custom', path: [index, 'key'], message: `duplicate key ${variable.key}` });
      seen.add(variable.key);
    });
  });

const Selector = celExpression('target').openapi({
  description: 'CEL over `resource`, `deployment` and `environment`: the release targets the set applies to',
});
const Priority = z.number().int().min(-1_000_000).max(1_000_000);
const SetDescription = displayText(z.string().max(4000), 'multi');

export const VariableSetBody = z
  .object({
    name: Name,
    description: SetDescription.default(''),
    selector: Selector,
    priority: Priority.default(0).openapi({
      description: 'Between matching sets, the higher priority wins (ties: by name)',
    }),
    variables: Variables,
  })
  .openapi('VariableSetInput');

export const VariableSetUpdateBody = z
  .object({
    name: Name.optional(),
    description: SetDescription.optional(),
    selector: Selector.optional(),
    priority: Priority.optional(),
    variables: Variables.optional().openapi({
      description: 'When given, the set’s variables become exactly these',
    }),
  })
  .openapi('VariableSetUpdate');

export const VariableSetParams = z.object({ workspaceId: z.uuid(), variableSetId: z.uuid() });

export const VariableSetSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string(),
    selector: z.string(),
    priority: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('VariableSet');

export const VariableSetVariableSchema = z
  .object({
    key: z.string(),
    value: z.unknown().openapi({
      description: 'As sent; an object as {"object": {...}}; a sensitive value as {"sensitive": true}',
    }),
    sensitive: z.boolean(),
  })
  .openapi('VariableSetVariable');

export const VariableSetWithVariablesSchema = VariableSetSchema.extend({
  variables: z.array(VariableSetVariableSchema),
}).openapi('VariableSetWithVariables');

export function toVariableSet(set: VariableSet): z.infer<typeof VariableSetSchema> {
  return {
    id: set.id,
    name: set.name,
    description: set.description,
    selector: set.selector,
    priority: set.priority,
    createdAt: iso(set.createdAt),
    updatedAt: iso(set.updatedAt),
  };
}

function showSetValue(variable: VariableSetVariable): unknown {
  if (variable.reference) return variable.reference;
  if (variable.sensitive) return showValue(variable.value, true);
  const { value } = variable;
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? { object: value } : value;
}

export function toVariableSetWithVariables({
  set,
  variables,
}: VariableSetWithVariables): z.infer<typeof VariableSetWithVariablesSchema> {
  return {
    ...toVariableSet(set),
    variables: variables.map((variable) => ({
      key: variable.key,
      value: showSetValue(variable),
      sensitive: variable.sensitive,
    })),
  };
}
