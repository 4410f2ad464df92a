import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { JobAgentType } from '../../domain/jobAgentTypes';
import type { JobStatus } from '../../domain/jobStatus';
import { timestamps, workspaceScoped } from './common';

/**
 * A job executes a release on one job agent (docs/behaviour.md "Job"), or one step of a runbook run (then it
 * has no release, and a resource only when the run fans out over resources). Its configuration and
 * dispatch context are snapshots taken at creation; secrets in them are stored sealed.
 */
export const JobSchema = defineEntity({
  name: 'Job',
  tableName: 'job',
  properties: (p) => ({
    ...workspaceScoped(),
    releaseId: p.uuid().nullable(),
    /** The runbook run it belongs to (column `workflow_run_id`, Ctrlplane's name). */
    runbookRunId: p.uuid().fieldName('workflow_run_id').nullable(),
    deploymentId: p.uuid().nullable(),
    environmentId: p.uuid().nullable(),
    resourceId: p.uuid().nullable(),
    jobAgentId: p.uuid().nullable(),
    agentType: p.text().$type<JobAgentType>().nullable(),
    /** Which entry of the deployment's `jobAgents` this job serves. */
    agentEntry: p.integer().nullable(),
    attempt: p.integer(),
    status: p.text().$type<JobStatus>(),
    message: p.text().nullable(),
    externalId: p.text().nullable(),
    jobAgentConfig: p.json<Record<string, unknown>>(),
    dispatchContext: p.json<Record<string, unknown>>(),
    ...timestamps(),
    startedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
  }),
});
export type Job = InferEntity<typeof JobSchema>;

export type VerificationStatus = 'pending' | 'running' | 'passed' | 'failed' | 'cancelled';

export interface Measurement {
  metric: string;
  at: string;
  passed: boolean;
  result?: unknown;
  error?: string;
}

/** A verification created at dispatch from a matching `verification` rule, measured by the release workflow. */
export const JobVerificationSchema = defineEntity({
  name: 'JobVerification',
  tableName: 'job_verification',
  properties: (p) => ({
    ...workspaceScoped(),
    jobId: p.uuid(),
    policyId: p.uuid().nullable(),
    ruleId: p.uuid().nullable(),
    trigger: p.text(),
    metrics: p.json<Record<string, unknown>[]>(),
    status: p.text().$type<VerificationStatus>(),
    measurements: p.json<Measurement[]>(),
    message: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    startedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
  }),
});
export type JobVerification = InferEntity<typeof JobVerificationSchema>;
