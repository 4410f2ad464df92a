import type { Job, Runbook } from '../../db/entities';
import type { RunbookRunWithJobs } from '../../application/runbooks';
import { redactConfig } from '../../db/sensitiveValues';
import { celExpression } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import { checkSelector, describeProblem, MAX_SELECTOR_LENGTH } from '../../domain/selectors';
import { JsonObjectSchema, iso, isoOrNull, Name, Slug, Timestamp } from './common';
import { JobStatusSchema } from './job';
import { z } from './zod';

/*
 * Runbooks on the wire: Ctrlplane's API calls them workflows, so the OpenAPI components
 * (`Workflow`, `WorkflowRun`, …) and the fields (`workflowId`) keep its names.
 */

/** An input key: what templates write as `{{ inputs.<key> }}` and selectors as `inputs.<key>`. */
const InputKey = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'a letter or _, then letters, digits or _ (at most 64)');

const ENTITY_TYPES = ['resource', 'environment', 'deployment'] as const;

const InputDeclarationSchema = z
  .union([
    z.strictObject({ key: InputKey, type: z.literal('string'), default: z.string().max(10_000).optional() }),
    z.strictObject({ key: InputKey, type: z.literal('number'), default: z.number().optional() }),
    z.strictObject({ key: InputKey, type: z.literal('boolean'), default: z.boolean().optional() }),
    z.strictObject({ key: InputKey, type: z.literal('object'), default: JsonObjectSchema.optional() }),
    z.strictObject({
      key: InputKey,
      type: z.literal('array'),
      selector: z
        .strictObject({
          entityType: z.enum(ENTITY_TYPES),
          default: z
            .string()
            .max(MAX_SELECTOR_LENGTH)
            .optional()
            .openapi({ description: 'CEL over the entity type' }),
        })
        .superRefine((selector, ctx) => {
          const problem =
            selector.default === undefined ? undefined : checkSelector(selector.entityType, selector.default);
          if (problem)
            ctx.addIssue({
              code: 'custom',
              path: ['default'],
              message: `invalid CEL: ${describeProblem(problem)}`,
            });
        }),
    }),
    z.strictObject({
      key: InputKey,
      type: z.literal('array'),
      default: z.array(JsonObjectSchema).max(1000).optional(),
    }),
  ])
  .openapi('WorkflowInputDeclaration', {
    description:
      'A typed input; an `array` input with a `selector` takes a CEL expression and gives the entities it selects (resources selected this way are what the run fans out over). A `string` input keyed `resourceSelector` is CEL over resources too: the run fans out over what it selects (none when blank), and the input keeps the expression',
  });

const AgentEntrySchema = z.strictObject({
  name: displayText(z.string().min(1).max(200), 'single'),
  ref: z.string().min(1).max(200).openapi({
    description:
      'The job agent: its id or name in this workspace. It may be registered after the workflow is saved; a run refuses an entry whose agent does not exist',
  }),
  config: JsonObjectSchema.default({}).openapi({
    description:
      'Configuration over the agent’s own; string values may hold {{ inputs.x }}, {{ resource.name }}, {{ run.id }} …',
  }),
  selector: celExpression('workflowJob').default('true').openapi({
    description:
      'CEL over `inputs`, `resource` and the entry’s `jobAgent` (its config without secrets): whether the entry runs a job',
  }),
});

export const RunbookBody = z
  .object({
    name: Name,
    slug: Slug.optional().openapi({ description: 'Unique in the workspace; made from the name if omitted' }),
    inputs: z.array(InputDeclarationSchema).max(50).default([]),
    jobAgents: z.array(AgentEntrySchema).max(20),
  })
  .openapi('WorkflowInput');

export const RunbookSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    slug: z.string(),
    inputs: z.array(InputDeclarationSchema),
    jobAgents: z.array(
      z.object({ name: z.string(), ref: z.string(), config: JsonObjectSchema, selector: z.string() }),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('Workflow');

export const RunbookRunBody = z
  .object({
    inputs: JsonObjectSchema.default({}).openapi({
      description: 'A value per declared input; defaults fill the rest',
    }),
  })
  .openapi('WorkflowRunInput');

export const RunbookRunSchema = z
  .object({
    id: z.uuid(),
    workflowId: z.uuid(),
    inputs: JsonObjectSchema,
    status: z.enum(['running', 'succeeded', 'failed', 'cancelled']),
    jobs: z.array(
      z.object({
        jobId: z.uuid(),
        jobAgentId: z.uuid().nullable(),
        resourceId: z.uuid().nullable(),
        status: JobStatusSchema,
      }),
    ),
    createdAt: Timestamp,
    completedAt: Timestamp.nullable(),
  })
  .openapi('WorkflowRun', {
    description: 'A run and its jobs; each job is polled, claimed and reported like any other',
  });

export const RunbookParams = z.object({ workspaceId: z.uuid(), workflowId: z.uuid() });
export const RunbookRunParams = RunbookParams.extend({ runId: z.uuid() });
export const RunbookSlugParams = z.object({ workspaceId: z.uuid(), slug: z.string().min(1).max(100) });

export function toRunbook(runbook: Runbook): z.infer<typeof RunbookSchema> {
  return {
    id: runbook.id,
    workspaceId: runbook.workspaceId,
    name: runbook.name,
    slug: runbook.slug,
    inputs: runbook.inputs as z.infer<typeof InputDeclarationSchema>[],
    jobAgents: runbook.jobAgents.map((entry) => ({ ...entry, config: redactConfig(entry.config) })),
    createdAt: iso(runbook.createdAt),
    updatedAt: iso(runbook.updatedAt),
  };
}

const toRunJob = (job: Job) => ({
  jobId: job.id,
  jobAgentId: job.jobAgentId ?? null,
  resourceId: job.resourceId ?? null,
  status: job.status,
});

export function toRunbookRun({ run, jobs }: RunbookRunWithJobs): z.infer<typeof RunbookRunSchema> {
  return {
    id: run.id,
    workflowId: run.runbookId,
    inputs: run.inputs,
    status: run.status,
    jobs: jobs.map(toRunJob),
    createdAt: iso(run.createdAt),
    completedAt: isoOrNull(run.completedAt),
  };
}
