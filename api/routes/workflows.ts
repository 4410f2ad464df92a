import { route } from '../route';
import { pageOf, pageQuery, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  toWorkflow,
  toWorkflowRun,
  WorkflowBody,
  WorkflowParams,
  WorkflowRunBody,
  WorkflowRunSchema,
  WorkflowSchema,
  WorkflowSlugParams,
} from '../schemas/workflow';

const tags = ['Workflows'];
const one = '/workspaces/{workspaceId}/workflows/{workflowId}';
const duplicateSlug = {
  description:
    'Another workflow has the slug: code `DUPLICATE_SLUG`, `details` `{slug, existingWorkflowId}` (Ctrlplane’s)',
};

/**
 * Ctrlplane's workflows: named, typed templates of jobs, run on demand. A run answers with its
 * jobs at once; its Temporal workflow (`workflow-run/<runId>`) dispatches them and ends the run.
 */
export const workflowRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/workflows',
    summary: 'List workflows, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: pageQuery(),
    responses: { 200: { description: 'Workflows', schema: pageOf(WorkflowSchema, 'WorkflowPage') } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.workflows.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toWorkflow) };
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
    body: WorkflowBody,
    responses: { 201: { description: 'The workflow', schema: WorkflowSchema }, 409: duplicateSlug },
    async handle(ctx, { params, body }) {
      return {
        status: 201,
        body: toWorkflow(await ctx.state.stores.workflows.create(params.workspaceId, body)),
      };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/workflows/slug/{slug}',
    summary: 'Get a workflow by its slug',
    tags,
    auth: 'apiKey',
    params: WorkflowSlugParams,
    responses: { 200: { description: 'The workflow', schema: WorkflowSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toWorkflow(await ctx.state.stores.workflows.getBySlug(params.workspaceId, params.slug)),
      };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/workflows/slug/{slug}/runs',
    summary: 'Run the workflow with this slug',
    tags,
    auth: 'apiKey',
    params: WorkflowSlugParams,
    body: WorkflowRunBody,
    responses: { 201: { description: 'The run and its jobs', schema: WorkflowRunSchema } },
    async handle(ctx, { params, body }) {
      const { workflows } = ctx.state.stores;
      const workflow = await workflows.getBySlug(params.workspaceId, params.slug);
      return {
        status: 201,
        body: toWorkflowRun(await workflows.run(params.workspaceId, workflow, body.inputs)),
      };
    },
  }),
  route({
    method: 'get',
    path: one,
    summary: 'Get a workflow',
    tags,
    auth: 'apiKey',
    params: WorkflowParams,
    responses: { 200: { description: 'The workflow', schema: WorkflowSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toWorkflow(await ctx.state.stores.workflows.get(params.workspaceId, params.workflowId)),
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
    params: WorkflowParams,
    body: WorkflowBody,
    responses: { 202: { description: 'The workflow', schema: WorkflowSchema }, 409: duplicateSlug },
    async handle(ctx, { params, body }) {
      const workflow = await ctx.state.stores.workflows.update(params.workspaceId, params.workflowId, body);
      return { status: 202, body: toWorkflow(workflow) };
    },
  }),
  route({
    method: 'delete',
    path: one,
    summary: 'Delete a workflow with its runs',
    description: 'Refused (409) while one of its runs has a job that has not ended.',
    tags,
    auth: 'apiKey',
    params: WorkflowParams,
    responses: { 202: { description: 'The deleted workflow', schema: WorkflowSchema } },
    async handle(ctx, { params }) {
      return {
        status: 202,
        body: toWorkflow(await ctx.state.stores.workflows.delete(params.workspaceId, params.workflowId)),
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
    params: WorkflowParams,
    body: WorkflowRunBody,
    responses: { 201: { description: 'The run and its jobs', schema: WorkflowRunSchema } },
    async handle(ctx, { params, body }) {
      const { workflows } = ctx.state.stores;
      const workflow = await workflows.get(params.workspaceId, params.workflowId);
      return {
        status: 201,
        body: toWorkflowRun(await workflows.run(params.workspaceId, workflow, body.inputs)),
      };
    },
  }),
  route({
    method: 'get',
    path: `${one}/runs`,
    summary: 'List a workflow’s runs, newest first, with their jobs',
    tags,
    auth: 'apiKey',
    params: WorkflowParams,
    query: pageQuery(),
    responses: { 200: { description: 'Runs', schema: pageOf(WorkflowRunSchema, 'WorkflowRunPage') } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.workflows.runs(params.workspaceId, params.workflowId, query);
      return { status: 200, body: pageResponse(page, toWorkflowRun) };
    },
  }),
];
