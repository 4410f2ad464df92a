import { RELEASE_PHASES } from '../../domain/releases';
import { Timestamp } from './common';
import { RuleEvaluationSchema } from './release';
import { z } from './zod';

const Phase = z.enum(RELEASE_PHASES);

export const ExplainQuery = z.object({
  versionId: z.uuid().optional().openapi({ description: 'Default: the deployment’s newest ready version' }),
});

export const ExplanationSchema = z
  .object({
    version: z.object({ id: z.uuid(), tag: z.string() }),
    release: z.object({ id: z.uuid(), phase: Phase }).nullable(),
    decision: z.enum(['proceed', 'wait', 'blocked', 'superseded', 'withdrawn']),
    reason: z.string(),
    rules: z.array(RuleEvaluationSchema.extend({ approvedBy: z.array(z.string()).optional() })),
    nextEvaluationAt: Timestamp.optional(),
    evaluatedAt: Timestamp,
    slot: z.object({
      activeRelease: z.object({ id: z.uuid(), versionTag: z.string(), phase: Phase }).nullable(),
      activeJobs: z.array(
        z.object({
          id: z.uuid(),
          status: z.string(),
          agent: z.object({ id: z.uuid(), name: z.string(), type: z.string() }).nullable(),
          createdAt: Timestamp,
          startedAt: Timestamp.nullable(),
        }),
      ),
      currentRelease: z.object({ id: z.uuid(), versionTag: z.string() }).nullable(),
    }),
    next: z.string().openapi({ description: 'What happens next, in a sentence' }),
    selectorWarnings: z
      .array(
        z.object({
          record: z.object({
            type: z.enum(['environment', 'deployment', 'policy']),
            id: z.uuid(),
            name: z.string(),
          }),
          path: z.string(),
          message: z.string(),
          lastSeenAt: Timestamp,
        }),
      )
      .optional()
      .openapi({
        description:
          'Selectors deciding the target whose evaluation was stopped by its budget; where stopped, they did not match',
      }),
  })
  .openapi('TargetExplanation', {
    description:
      'Why the target is (not) on the version: every rule’s verdict from the gates’ own code, the target’s slot, and what happens next',
  });

export const VariablePreviewSchema = z
  .object({
    version: z.object({ id: z.uuid(), tag: z.string() }),
    variables: z.array(
      z.object({
        key: z.string(),
        value: z.unknown().openapi({ description: 'Shown as {"sensitive": true} when sensitive' }),
        sensitive: z.boolean(),
        source: z.enum(['resource', 'value', 'variable_set', 'default']),
        valueId: z.uuid().optional(),
        priority: z.number().int().optional(),
        resourceSelector: z.string().nullable().optional(),
        variableSetId: z.uuid().optional(),
        variableSetName: z.string().optional(),
        reference: z.object({ reference: z.string(), path: z.array(z.string()) }).optional(),
      }),
    ),
    changes: z.array(
      z.object({ key: z.string(), change: z.enum(['added', 'removed', 'changed', 'unchanged']) }),
    ),
    currentReleaseId: z.uuid().nullable(),
  })
  .openapi('VariablePreview', {
    description:
      'The variables a version would get on the target, each with the source that won, against the running release’s',
  });
