import type { Job } from '../../db/entities';
import type { Stores } from '../../db/stores';
import { route } from '../route';
import { agentCaller } from './pull';
import { pageOf, pageResponse, WorkspaceParams } from '../schemas/common';
import { DeploymentSchema } from '../schemas/deployment';
import { ReleaseSchema, toRelease } from '../schemas/release';
import { ResourceSchema } from '../schemas/resource';
import { EnvironmentWithSystemsSchema } from '../schemas/system';
import { z } from '../schemas/zod';
import { present as presentDeployments } from './deployments';
import { present as presentEnvironments } from './environments';
import { presentResources } from './resources';
import {
  JobListQuery,
  JobParams,
  JobSchema,
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

const JobWithReleaseSchema = z
  .object({
    job: JobSchema,
    release: ReleaseSchema,
    deployment: DeploymentSchema,
    environment: EnvironmentWithSystemsSchema,
    resource: ResourceSchema,
  })
  .openapi('JobWithRelease');

export const jobRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/jobs',
    summary: 'List jobs, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: JobListQuery,
    responses: { 200: { description: 'Jobs', schema: pageOf(JobSchema, 'JobPage') } },
    async handle(ctx, { params, query }) {
      const { limit, offset, ...filter } = query;
      const page = await ctx.state.stores.jobs.list(params.workspaceId, filter, { limit, offset });
      return { status: 200, body: pageResponse(page, toJob) };
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
      const stores = ctx.state.stores;
      return {
        status: 200,
        body: {
          job: toJob(found.job),
          release: toRelease(found.release),
          deployment: (await presentDeployments(stores, [found.deployment]))[0]!,
          environment: (await presentEnvironments(stores, [found.environment]))[0]!,
          resource: (await presentResources(stores, [found.resource]))[0]!,
        },
      };
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
      202: { description: 'The job', schema: JobSchema },
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
      return { status: 202, body: toJob(job) };
    },
  }),
];
