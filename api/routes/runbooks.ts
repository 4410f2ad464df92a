import { route } from '../route';
import { pageOf, pageQuery, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  RunbookBody,
  RunbookParams,
  RunbookRunParams,
  RunbookRunBody,
  RunbookRunSchema,
  RunbookSchema,
  RunbookSlugParams,
  toRunbook,
  toRunbookRun,
} from '../schemas/runbook';

const tags = ['Workflows'];
const one = '/workspaces/{workspaceId}/workflows/{workflowId}';
const duplicateSlug = {
  description:
    'Another workflow has the slug: code `DUPLICATE_SLUG`, `details` `{slug, existingWorkflowId}` (Ctrlplane’s)',
};

/**
 * Runbooks, at Ctrlplane's paths for what it calls workflows (`/workflows`; paths, tags, summaries
 * and fields keep its names): named, typed templates of jobs, run on demand. A run answers with its
 * jobs at once; its Temporal workflow (`workflow-run/<runId>`) dispatches them and ends the run.
 */
export const runbookRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/workflows',
    summary: 'List workflows, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: pageQuery(),
    responses: { 200: { description: 'Workflows', schema: pageOf(RunbookSchema, 'WorkflowPage') } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.runbooks.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toRunbook) };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/workflows',
    summary: 'Create a workflow',
    description:
      'Each entry’s `ref` must name a job agent of the workspace; a slug another workflow has answers 409.',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: RunbookBody,
    responses: { 201: { description: 'The workflow', schema: RunbookSchema }, 409: duplicateSlug },
    async handle(ctx, { params, body }) {
      return {
        status: 201,
        body: toRunbook(await ctx.state.stores.runbooks.create(params.workspaceId, body)),
      };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/workflows/slug/{slug}',
    summary: 'Get a workflow by its slug',
    tags,
    auth: 'apiKey',
    params: RunbookSlugParams,
    responses: { 200: { description: 'The workflow', schema: RunbookSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toRunbook(await ctx.state.stores.runbooks.getBySlug(params.workspaceId, params.slug)),
      };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/workflows/slug/{slug}/runs',
    summary: 'Run the workflow with this slug',
    tags,
    auth: 'apiKey',
    params: RunbookSlugParams,
    body: RunbookRunBody,
    responses: { 201: { description: 'The run and its jobs', schema: RunbookRunSchema } },
    async handle(ctx, { params, body }) {
      const { runbooks } = ctx.state.stores;
      const runbook = await runbooks.getBySlug(params.workspaceId, params.slug);
      return {
        status: 201,
        body: toRunbookRun(await runbooks.run(params.workspaceId, runbook, body.inputs)),
      };
    },
  }),
  route({
    method: 'get',
    path: one,
    summary: 'Get a workflow',
    tags,
    auth: 'apiKey',
    params: RunbookParams,
    responses: { 200: { description: 'The workflow', schema: RunbookSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toRunbook(await ctx.state.stores.runbooks.get(params.workspaceId, params.workflowId)),
      };
    },
  }),
  route({
    method: 'put',
    path: one,
    summary: 'Replace a workflow',
    description: 'Runs already made keep the jobs they were given.',
    tags,
    auth: 'apiKey',
    params: RunbookParams,
    body: RunbookBody,
    responses: { 202: { description: 'The workflow', schema: RunbookSchema }, 409: duplicateSlug },
    async handle(ctx, { params, body }) {
      const runbook = await ctx.state.stores.runbooks.update(params.workspaceId, params.workflowId, body);
      return { status: 202, body: toRunbook(runbook) };
    },
  }),
  route({
    method: 'delete',
    path: one,
    summary: 'Delete a workflow with its runs',
    description: 'Refused (409) while one of its runs has a job that has not ended.',
    tags,
    auth: 'apiKey',
    params: RunbookParams,
    responses: { 202: { description: 'The deleted workflow', schema: RunbookSchema } },
    async handle(ctx, { params }) {
      return {
        status: 202,
        body: toRunbook(await ctx.state.stores.runbooks.delete(params.workspaceId, params.workflowId)),
      };
    },
  }),
  route({
    method: 'post',
    path: `${one}/runs`,
    summary: 'Run a workflow',
    description:
      'Checks the inputs against the declarations, then creates one job per matched resource for each entry whose selector matches; nothing is written when the run is refused.',
    tags,
    auth: 'apiKey',
    params: RunbookParams,
    body: RunbookRunBody,
    responses: { 201: { description: 'The run and its jobs', schema: RunbookRunSchema } },
    async handle(ctx, { params, body }) {
      const { runbooks } = ctx.state.stores;
      const runbook = await runbooks.get(params.workspaceId, params.workflowId);
      return {
        status: 201,
        body: toRunbookRun(await runbooks.run(params.workspaceId, runbook, body.inputs)),
      };
    },
  }),
  route({
    method: 'get',
    path: `${one}/runs`,
    summary: 'List a workflow’s runs, newest first, with their jobs',
    tags,
    auth: 'apiKey',
    params: RunbookParams,
    query: pageQuery(),
    responses: { 200: { description: 'Runs', schema: pageOf(RunbookRunSchema, 'WorkflowRunPage') } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.runbooks.runs(params.workspaceId, params.workflowId, query);
      return { status: 200, body: pageResponse(page, toRunbookRun) };
    },
  }),
  route({
    method: 'post',
    path: `${one}/runs/{runId}/cancel`,
    summary: 'Cancel a run as a whole',
    description:
      'Its jobs end `cancelled`; a job an agent holds under a lease is asked to stop first (its heartbeats and ' +
      'polls say `cancelRequested` with a deadline, as a release’s cancel does). 409 once the run has ended.',
    tags,
    auth: 'apiKey',
    params: RunbookRunParams,
    responses: { 200: { description: 'The run, cancelled, and its jobs', schema: RunbookRunSchema } },
    async handle(ctx, { params }) {
      const run = await ctx.state.stores.runbooks.cancelRun(
        params.workspaceId,
        params.workflowId,
        params.runId,
      );
      return { status: 200, body: toRunbookRun(run) };
    },
  }),
];
