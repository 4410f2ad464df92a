import type { LegacyQueueItem } from '../../application/pull';
import type { PollItem } from '../../engine/jobMoves';
import { displayText } from '../../domain/displayText';
import { JsonObjectSchema, pageQuery, Timestamp } from './common';
import { JobSchema, JobStatusInput, JobStatusSchema } from './job';
import { z } from './zod';

export const PollItemSchema = z
  .object({
    id: z.uuid(),
    status: JobStatusSchema,
    releaseId: z.uuid().nullable(),
    workflowRunId: z.uuid().nullable(),
    jobAgentId: z.uuid(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    jobAgentConfig: JsonObjectSchema.openapi({
      description: 'Empty in a poll: the claim answers the configuration, secrets included',
    }),
    metadata: z.record(z.string(), z.string()).openapi({ description: 'Always empty' }),
    deployment: z.object({ id: z.uuid(), name: z.string(), slug: z.string() }).nullable(),
    environment: z.object({ id: z.uuid(), name: z.string() }).nullable(),
    resource: z.object({ id: z.uuid(), name: z.string(), identifier: z.string() }).nullable(),
    cancelRequested: z.boolean().optional().openapi({
      description: "True once the job's cancel was asked: stop it and report cancelled before cancelDeadline",
    }),
    cancelDeadline: Timestamp.optional(),
  })
  .openapi('JobListItem', {
    description:
      "A job to claim, as Ctrlplane's job with its target's names: no configuration, dispatch context or variables",
  });

export const PollQuery = pageQuery(100).extend({
  status: JobStatusInput.default('queued'),
});

export const AgentJobsParams = z.object({ workspaceId: z.uuid(), jobAgentId: z.uuid() });
export const AgentJobParams = AgentJobsParams.extend({ jobId: z.uuid() });

export const ClaimedJobSchema = JobSchema.extend({
  jobAgentConfig: JsonObjectSchema.openapi({ description: 'Merged configuration, secrets included' }),
  dispatchContext: JsonObjectSchema.openapi({
    description: 'The execution snapshot, secret-flagged variables included',
  }),
  lease_seconds: z
    .number()
    .int()
    .optional()
    .openapi({ description: 'Under a lease: its length in seconds; heartbeat well within it' }),
  claim_id: z.uuid().optional().openapi({ description: 'Under a lease: the fencing token of this claim' }),
  claim_expires_at: Timestamp.optional(),
}).openapi('ClaimedJob');

export const ClaimIdBody = z.object({ claim_id: z.uuid().optional() }).default({}).openapi('ClaimIdentity');

export const LeaseSchema = z
  .object({
    job_id: z.uuid(),
    claim_id: z.uuid(),
    claim_expires_at: Timestamp,
    lease_seconds: z.number().int(),
    cancelRequested: z.boolean().optional().openapi({
      description: "True once the job's cancel was asked: stop it and report cancelled before cancelDeadline",
    }),
    cancelDeadline: Timestamp.optional().openapi({
      description: 'After it the job ends cancelled anyway; the lease is not extended past it',
    }),
  })
  .openapi('Lease');

export const LegacyQueueSchema = z
  .object({
    jobs: z.array(
      z.object({
        id: z.uuid(),
        release: z.object({
          id: z.uuid(),
          version: z.object({ tag: z.string(), config: JsonObjectSchema }),
          environment: z.object({ name: z.string() }),
          resource: z.object({ identifier: z.string(), config: JsonObjectSchema }),
          variables: z.record(z.string(), z.string()),
        }),
        jobAgentConfig: JsonObjectSchema,
      }),
    ),
  })
  .openapi('LegacyJobQueue');

export const LegacyJobUpdateBody = z
  .object({
    status: JobStatusInput.optional(),
    message: displayText(z.string().max(10_000), 'multi').nullish(),
    externalId: z.string().max(1000).nullish(),
  })
  .refine(
    (body) => Object.values(body).some((value) => value !== undefined),
    'give status, message or externalId',
  )
  .openapi('LegacyJobUpdate');

export function toPollItem({ cancelDeadline, ...item }: PollItem): z.infer<typeof PollItemSchema> {
  return {
    ...item,
    jobAgentConfig: {},
    metadata: {},
    ...(cancelDeadline
      ? { cancelRequested: true, cancelDeadline: new Date(cancelDeadline).toISOString() }
      : {}),
  };
}

export function toLegacyQueue(items: LegacyQueueItem[]): z.infer<typeof LegacyQueueSchema> {
  return { jobs: items };
}
