import type { AgentCaller } from '../../engine/jobMoves';
import { ForbiddenError } from '../../domain/errors';
import { route } from '../route';
import type { AppContext } from '../context';
import { pageResponse, pageOf } from '../schemas/common';
import { JobParams, JobSchema, JobStatusAcceptedSchema, JobStatusBody, toJob } from '../schemas/job';
import {
  AgentJobParams,
  AgentJobsParams,
  ClaimedJobSchema,
  ClaimIdBody,
  LeaseSchema,
  LegacyJobUpdateBody,
  LegacyQueueSchema,
  PollItemSchema,
  PollQuery,
  toLegacyQueue,
  toPollItem,
} from '../schemas/pull';
import { z } from '../schemas/zod';

const tags = ['Pull agents'];

/** The caller of a pull endpoint: the key's workspace, and its agent when the key is scoped to one. */
export function agentCaller(ctx: AppContext): AgentCaller {
  const principal = ctx.state.principal;
  if (principal?.kind !== 'apiKey') throw new ForbiddenError('Pull endpoints take an API key');
  return { workspaceId: principal.workspaceId, jobAgentId: principal.jobAgentId };
}

/**
 * The agents' routes, the claim lifecycle's HTTP side: poll, claim, heartbeat, status report and requeue, and the
 * legacy flow. Reads of jobs are in jobs.ts.
 */
export const pullRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/job-agents/{jobAgentId}/jobs',
    pull: true,
    summary: "Poll: the agent's jobs in a status (queued by default), oldest first",
    description:
      'Side-effect free; claims nothing; answers at once (no long poll). Never returns dispatch context or variables.',
    tags,
    auth: 'apiKey',
    params: AgentJobsParams,
    query: PollQuery,
    responses: {
      200: {
        description: 'Job list items',
        schema: pageOf(PollItemSchema, 'JobListItemPage', { boundedTotal: true }),
      },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.pull.poll(agentCaller(ctx), params.jobAgentId, query.status, query);
      return { status: 200, body: pageResponse(page, toPollItem) };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/job-agents/{jobAgentId}/jobs/{jobId}/claim',
    audit: false,
    pull: true,
    summary: 'Claim a queued job: it becomes in_progress, handed out at most once',
    description:
      'No payload. Answers the full job with its configuration and dispatch context (secrets included). A job that is ' +
      'not queued, or was claimed first by someone else, answers 409. For an agent with a lease (config.leaseSeconds), ' +
      'the answer adds lease_seconds, claim_id and claim_expires_at; heartbeat before the lease ends.',
    tags,
    auth: 'apiKey',
    params: AgentJobParams,
    responses: {
      200: { description: 'The claimed job', schema: ClaimedJobSchema },
      409: { description: 'The job is not queued (another claim got it first)' },
    },
    async handle(ctx, { params }) {
      const { job, lease } = await ctx.state.stores.pull.claim(
        agentCaller(ctx),
        params.jobAgentId,
        params.jobId,
      );
      return {
        status: 200,
        body: {
          ...toJob(job),
          ...(lease
            ? {
                lease_seconds: lease.leaseSeconds,
                claim_id: lease.claimId,
                claim_expires_at: lease.expiresAt,
              }
            : {}),
        },
      };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/jobs/{jobId}/heartbeat',
    audit: false,
    pull: true,
    summary: "Extend a claim's lease to now + its length",
    description:
      "Touches only the claim record. Once the job's cancel was asked the answer says cancelRequested with a " +
      'cancelDeadline, and the lease is not extended past it: stop the job and report cancelled. 404 for an unknown ' +
      'job; 409 when the job holds no claim (requeued, expired, cancelled: the answer names its status) or the ' +
      'claim_id is not the current one.',
    tags,
    auth: 'apiKey',
    params: JobParams,
    body: ClaimIdBody,
    responses: {
      200: { description: 'The lease', schema: LeaseSchema },
      409: { description: 'The claim has ended or is not the current one' },
    },
    async handle(ctx, { params, body }) {
      const lease = await ctx.state.stores.pull.heartbeat(agentCaller(ctx), params.jobId, body.claim_id);
      return {
        status: 200,
        body: {
          job_id: lease.jobId,
          claim_id: lease.claimId,
          claim_expires_at: lease.expiresAt,
          lease_seconds: lease.leaseSeconds,
          ...(lease.cancelDeadline ? { cancelRequested: true, cancelDeadline: lease.cancelDeadline } : {}),
        },
      };
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/jobs/{jobId}/status',
    audit: false,
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
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/jobs/{jobId}/requeue',
    audit: false,
    pull: true,
    summary: 'Give an in_progress job back to the queue',
    description:
      'The manual recovery of a job whose agent died without a lease, and how an agent gives a job back cleanly.',
    tags,
    auth: 'apiKey',
    params: JobParams,
    body: ClaimIdBody,
    responses: {
      202: { description: 'The job, queued again', schema: JobSchema },
      409: { description: 'The job is not in progress' },
    },
    async handle(ctx, { params, body }) {
      return {
        status: 202,
        body: toJob(await ctx.state.stores.pull.requeue(agentCaller(ctx), params.jobId, body.claim_id)),
      };
    },
  }),
  route({
    method: 'get',
    path: '/job-agents/{jobAgentId}/queue/next',
    pull: true,
    summary: "Legacy polling: the agent's jobs that have not ended and carry no external id yet",
    tags: ['Legacy agents'],
    auth: 'apiKey',
    params: z.object({ jobAgentId: z.uuid() }),
    responses: { 200: { description: 'The queue', schema: LegacyQueueSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toLegacyQueue(await ctx.state.stores.pull.legacyQueue(agentCaller(ctx), params.jobAgentId)),
      };
    },
  }),
  route({
    method: 'patch',
    path: '/jobs/{jobId}',
    audit: false,
    pull: true,
    summary: 'Legacy update of a job: status (legacy names accepted), message, externalId',
    tags: ['Legacy agents'],
    auth: 'apiKey',
    params: z.object({ jobId: z.uuid() }),
    body: LegacyJobUpdateBody,
    responses: {
      200: { description: 'The job', schema: JobSchema },
      409: { description: 'A move the job cannot make' },
    },
    async handle(ctx, { params, body }) {
      const caller = agentCaller(ctx);
      const job = await ctx.state.stores.jobs.reportStatus(
        caller.workspaceId,
        caller.jobAgentId,
        params.jobId,
        body,
      );
      return { status: 200, body: toJob(job) };
    },
  }),
];
