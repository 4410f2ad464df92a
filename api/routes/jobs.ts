import type { Job } from '../../db/entities';
import type { Stores } from '../../db/stores';
import { route } from '../route';
import { agentCaller } from './pull';
import { pageOf, pageResponse, WorkspaceParams } from '../schemas/common';
import { JobWithReleaseSchema, toJobWithRelease } from '../schemas/jobWithRelease';
import {
  JobListQuery,
  JobParams,
  JobStatusAcceptedSchema,
  JobStatusBody,
  JobWithVerificationsSchema,
  toJob,
  toVerification,
} from '../schemas/job';

const tags = ['Jobs'];

export async function withVerifications(stores: Stores, jobs: Job[]) {
  const verifications = await stores.jobs.verifications(jobs.map((job) => job.id));
  return jobs.map((job) => ({
    job: toJob(job),
    verifications: (verifications.get(job.id) ?? []).map(toVerification),
  }));
}

export const jobRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/jobs',
    summary: 'List jobs, oldest first, each with its release and target records',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: JobListQuery,
    responses: {
      200: {
        description: 'Jobs with their releases',
        schema: pageOf(JobWithReleaseSchema, 'JobWithReleasePage'),
      },
    },
    async handle(ctx, { params, query }) {
      const { limit, offset, ...filter } = query;
      const page = await ctx.state.stores.jobs.listWithReleases(params.workspaceId, filter, {
        limit,
        offset,
      });
      return { status: 200, body: pageResponse(page, toJobWithRelease) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/jobs/{jobId}',
    summary: 'Get a job with its verifications',
    tags,
    auth: 'apiKey',
    params: JobParams,
    responses: { 200: { description: 'The job', schema: JobWithVerificationsSchema } },
    async handle(ctx, { params }) {
      const job = await ctx.state.stores.jobs.get(params.workspaceId, params.jobId);
      return { status: 200, body: (await withVerifications(ctx.state.stores, [job]))[0] };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/jobs/{jobId}/with-release',
    summary: 'Get a job with its release and the release target records',
    tags,
    auth: 'apiKey',
    params: JobParams,
    responses: { 200: { description: 'The job and its release', schema: JobWithReleaseSchema } },
    async handle(ctx, { params }) {
      const found = await ctx.state.stores.jobs.withRelease(params.workspaceId, params.jobId);
      return { status: 200, body: toJobWithRelease(found) };
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/jobs/{jobId}/status',
    pull: true,
    summary: "Report a job's status",
    description:
      'Records the status (and message and external id), sets completedAt once on a terminal status, and makes the ' +
      "release evaluate again. Reporting the job's current status again is harmless; a move the job cannot make is 409.",
    tags,
    auth: 'apiKey',
    params: JobParams,
    body: JobStatusBody,
    responses: {
      202: { description: 'The job, as reported', schema: JobStatusAcceptedSchema },
      409: { description: 'The job cannot move to that status, or a stale claim_id under enforceClaimId' },
    },
    async handle(ctx, { params, body }) {
      const caller = agentCaller(ctx);
      const job = await ctx.state.stores.jobs.reportStatus(
        params.workspaceId,
        caller.jobAgentId,
        params.jobId,
        {
          status: body.status,
          message: body.message,
          externalId: body.externalId,
          claimId: body.claim_id,
        },
      );
      return { status: 202, body: { id: job.id, message: 'Job status recorded', job: toJob(job) } };
    },
  }),
];
