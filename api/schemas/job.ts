import type { Job, JobVerification } from '../../db/entities';
import { redactMetricHeaders, redactTree } from '../../db/sensitiveValues';
import { displayText } from '../../domain/displayText';
import { JOB_STATUSES, normalizeJobStatus } from '../../domain/jobStatus';
import { releaseTargetKey } from '../../domain/releaseTargets';
import { ifPresent, iso, isoOrNull, JsonObjectSchema, pageQuery, Timestamp } from './common';
import { z } from './zod';

export const JobStatusSchema = z.enum(JOB_STATUSES).openapi('JobStatus');

/** A status as agents send it: canonical, legacy (`completed`, `failed`) or camelCase (`inProgress`). */
export const JobStatusInput = z
  .string()
  .transform((value, ctx) => {
    const status = normalizeJobStatus(value);
    if (!status) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown job status "${value}"; one of ${JOB_STATUSES.join(', ')}`,
      });
      return z.NEVER;
    }
    return status;
  })
  .openapi({
    type: 'string',
    description: 'A job status; legacy and camelCase spellings are accepted',
    example: 'successful',
  });

export const VerificationSchema = z
  .object({
    id: z.uuid(),
    jobId: z.uuid(),
    status: z.enum(['pending', 'running', 'passed', 'failed', 'cancelled']),
    trigger: z.string(),
    metrics: z.array(JsonObjectSchema),
    measurements: z.array(JsonObjectSchema),
    message: z.string().nullable(),
    createdAt: Timestamp,
    startedAt: Timestamp.nullable(),
    completedAt: Timestamp.nullable(),
  })
  .openapi('JobVerification');

export const JobSchema = z
  .object({
    id: z.uuid(),
    releaseId: z
      .union([z.uuid(), z.literal('')])
      .openapi({ description: "'' for a job of a runbook run (it has no release)" }),
    workflowRunId: z.uuid().nullable().openapi({
      description: 'The runbook run (`/workflows/{workflowId}/runs`) the job belongs to, if any',
    }),
    jobAgentId: z.union([z.uuid(), z.literal('')]).openapi({ description: "'' while the job has no agent" }),
    status: JobStatusSchema,
    externalId: z.string().optional().openapi({ description: "The agent's run id, once it reports one" }),
    message: z.string().nullable(),
    attempt: z.number().int(),
    deploymentId: z.uuid().nullable(),
    environmentId: z.uuid().nullable(),
    resourceId: z.uuid().nullable(),
    releaseTargetKey: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    startedAt: Timestamp.optional().openapi({ description: 'Absent until the job starts' }),
    completedAt: Timestamp.optional().openapi({ description: 'Absent until the job ends' }),
    metadata: z
      .record(z.string(), z.string())
      .openapi({ description: "Ctrlplane's job metadata; Flightdeck keeps none, so it is empty" }),
    jobAgentConfig: JsonObjectSchema.openapi({
      description: 'Merged execution configuration; secrets show as {"sensitive": true}',
    }),
    dispatchContext: JsonObjectSchema.openapi({
      description: 'Execution snapshot; secrets show as {"sensitive": true}',
    }),
  })
  .openapi('Job');

/** A release target's latest job: the job and its verifications side by side. */
export const JobWithVerificationsSchema = z
  .object({ job: JobSchema, verifications: z.array(VerificationSchema) })
  .openapi('JobWithVerifications');

/** A job read by id: Ctrlplane's `Job`, its fields at the top level, with its verifications beside them. */
export const JobDetailSchema = JobSchema.extend({ verifications: z.array(VerificationSchema) }).openapi(
  'JobDetail',
);

/** The answer to a status report: Ctrlplane's `{id, message}`, and the job as it now is. */
export const JobStatusAcceptedSchema = z
  .object({ id: z.uuid(), message: z.string(), job: JobSchema })
  .openapi('JobStatusAccepted');

export const JobStatusBody = z
  .object({
    status: JobStatusInput,
    message: displayText(z.string().max(10_000), 'multi').nullish(),
    externalId: z.string().max(1000).nullish(),
    claim_id: z
      .uuid()
      .optional()
      .openapi({ description: 'The claim being reported on (pull agents with leases)' }),
  })
  .openapi('JobStatusReport');

export const JobListQuery = pageQuery().extend({
  status: JobStatusInput.optional(),
  releaseId: z.uuid().optional(),
  deploymentId: z.uuid().optional(),
  environmentId: z.uuid().optional(),
  resourceId: z.uuid().optional(),
  jobAgentId: z.uuid().optional(),
});

export const JobParams = z.object({ workspaceId: z.uuid(), jobId: z.uuid() });

export function toJob(job: Job): z.infer<typeof JobSchema> {
  return {
    id: job.id,
    releaseId: job.releaseId ?? '',
    workflowRunId: job.runbookRunId ?? null,
    jobAgentId: job.jobAgentId ?? '',
    status: job.status,
    ...ifPresent('externalId', job.externalId),
    message: job.message ?? null,
    attempt: job.attempt,
    deploymentId: job.deploymentId ?? null,
    environmentId: job.environmentId ?? null,
    resourceId: job.resourceId ?? null,
    releaseTargetKey:
      job.resourceId && job.environmentId && job.deploymentId
        ? releaseTargetKey({
            resourceId: job.resourceId,
            environmentId: job.environmentId,
            deploymentId: job.deploymentId,
          })
        : null,
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    ...(job.startedAt ? { startedAt: iso(job.startedAt) } : {}),
    ...(job.completedAt ? { completedAt: iso(job.completedAt) } : {}),
    metadata: {},
    jobAgentConfig: redactTree(job.jobAgentConfig),
    dispatchContext: redactTree(job.dispatchContext),
  };
}

export function toVerification(verification: JobVerification): z.infer<typeof VerificationSchema> {
  return {
    id: verification.id,
    jobId: verification.jobId,
    status: verification.status,
    trigger: verification.trigger,
    metrics: redactMetricHeaders(verification.metrics),
    measurements: verification.measurements as unknown as Record<string, unknown>[],
    message: verification.message ?? null,
    createdAt: iso(verification.createdAt),
    startedAt: isoOrNull(verification.startedAt),
    completedAt: isoOrNull(verification.completedAt),
  };
}
