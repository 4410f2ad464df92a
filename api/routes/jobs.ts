import type { Job } from '../../db/entities';
import type { Stores } from '../../application';
import { route } from '../route';
import { pageOf, pageResponse, WorkspaceParams } from '../schemas/common';
import { JobWithReleaseSchema, toJobWithRelease } from '../schemas/jobWithRelease';
import { JobDetailSchema, JobListQuery, JobParams, toJob, toVerification } from '../schemas/job';

const tags = ['Jobs'];

/** Jobs as a release target's state shows them: `{job, verifications}`. */
export async function withVerifications(stores: Stores, jobs: Job[]) {
  const verifications = await stores.jobs.verifications(jobs.map((job) => job.id));
  return jobs.map((job) => ({
    job: toJob(job),
    verifications: (verifications.get(job.id) ?? []).map(toVerification),
  }));
}

/** The workspace's reads of jobs; agents' writes (claim, heartbeat, status, requeue) are in pull.ts. */
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
    summary: 'Get a job, with its verifications',
    description:
      "Ctrlplane's `Job` (its fields at the top level), and the job's `verifications` beside them.",
    tags,
    auth: 'apiKey',
    params: JobParams,
    responses: { 200: { description: 'The job', schema: JobDetailSchema } },
    async handle(ctx, { params }) {
      const { job, verifications } = await ctx.state.stores.jobs.withVerifications(
        params.workspaceId,
        params.jobId,
      );
      return { status: 200, body: { ...toJob(job), verifications: verifications.map(toVerification) } };
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
];
