import { callerWorkspace, route } from '../route';
import { pageOf, pageQuery, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  ApiKeyParams,
  ApiKeySummarySchema,
  CreateApiKeyBody,
  CreatedWorkspaceSchema,
  CreateWorkspaceBody,
  IssuedApiKeySchema,
  toApiKeySummary,
  toIssuedApiKey,
  toWorkspace,
  UpdateWorkspaceBody,
  WorkspaceListSchema,
  WorkspaceSchema,
  WorkspaceSlugParams,
} from '../schemas/workspace';

const tags = ['Workspaces'];

export const workspaceRoutes = [
  route({
    method: 'get',
    path: '/workspaces',
    summary: 'List the workspaces the API key can see (its own)',
    tags,
    auth: 'apiKey',
    responses: { 200: { description: 'Workspaces', schema: WorkspaceListSchema } },
    async handle(ctx) {
      const principal = ctx.state.principal;
      const own =
        principal?.kind === 'apiKey' ? [await ctx.state.stores.workspaces.get(principal.workspaceId)] : [];
      return {
        status: 200,
        body: { workspaces: own.map(toWorkspace), total: own.length },
      };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}',
    summary: 'Get a workspace',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    responses: { 200: { description: 'The workspace', schema: WorkspaceSchema } },
    async handle(ctx, { params }) {
      return { status: 200, body: toWorkspace(await ctx.state.stores.workspaces.get(params.workspaceId)) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/slug/{workspaceSlug}',
    summary: "Get the API key's workspace by its slug",
    description: 'Another workspace’s slug answers 404, as an unknown one.',
    tags,
    auth: 'apiKey',
    params: WorkspaceSlugParams,
    responses: { 200: { description: 'The workspace', schema: WorkspaceSchema } },
    async handle(ctx, { params }) {
      const workspace = await ctx.state.stores.workspaces.getOwnBySlug(
        callerWorkspace(ctx),
        params.workspaceSlug,
      );
      return { status: 200, body: toWorkspace(workspace) };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces',
    summary: 'Create a workspace and its first API key (operator token)',
    description:
      'The same as POST /admin/workspaces, at Ctrlplane’s path, and with a first API key (`apiKey`), whose secret is shown in this response only.',
    tags,
    auth: 'admin',
    body: CreateWorkspaceBody,
    responses: {
      201: { description: 'The new workspace and its first key', schema: CreatedWorkspaceSchema },
      409: { description: 'A workspace with this slug exists' },
    },
    async handle(ctx, { body }) {
      const { workspace, issued } = await ctx.state.stores.workspaces.createWithKey(body);
      return {
        status: 201,
        body: { ...toWorkspace(workspace), apiKey: toIssuedApiKey(issued.record, issued.key) },
      };
    },
  }),
  route({
    method: 'patch',
    path: '/workspaces/{workspaceId}',
    summary: 'Rename a workspace or change its slug',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: UpdateWorkspaceBody,
    responses: {
      200: { description: 'The workspace', schema: WorkspaceSchema },
      409: { description: 'Another workspace has this slug' },
    },
    async handle(ctx, { params, body }) {
      return {
        status: 200,
        body: toWorkspace(await ctx.state.stores.workspaces.update(params.workspaceId, body)),
      };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}',
    summary: 'Delete a workspace with every record and API key of it (operator token)',
    description:
      'Its open releases are woken and end, their records gone; jobs an agent already runs are not cancelled at the agent.',
    tags,
    auth: 'admin',
    params: WorkspaceParams,
    responses: { 204: { description: 'Deleted' } },
    async handle(ctx, { params }) {
      await ctx.state.stores.workspaces.delete(params.workspaceId);
      return { status: 204 };
    },
  }),
  route({
    method: 'post',
    path: '/admin/workspaces',
    summary: 'Create a workspace (operator token)',
    tags: ['Admin'],
    auth: 'admin',
    body: CreateWorkspaceBody,
    responses: { 201: { description: 'The new workspace', schema: WorkspaceSchema } },
    async handle(ctx, { body }) {
      return { status: 201, body: toWorkspace(await ctx.state.stores.workspaces.create(body)) };
    },
  }),
  route({
    method: 'post',
    path: '/admin/workspaces/{workspaceId}/api-keys',
    summary: 'Issue an API key for a workspace (operator token); the key is shown once',
    tags: ['Admin'],
    auth: 'admin',
    params: WorkspaceParams,
    body: CreateApiKeyBody,
    responses: { 201: { description: 'The key, shown once', schema: IssuedApiKeySchema } },
    async handle(ctx, { params, body }) {
      const issued = await ctx.state.stores.apiKeys.create({
        workspaceId: params.workspaceId,
        name: body.name,
        jobAgentId: body.jobAgentId,
      });
      return { status: 201, body: toIssuedApiKey(issued.record, issued.key) };
    },
  }),
  route({
    method: 'get',
    path: '/admin/workspaces/{workspaceId}/api-keys',
    summary: "List a workspace's API keys, revoked ones included (operator token); never the keys",
    tags: ['Admin'],
    auth: 'admin',
    params: WorkspaceParams,
    query: pageQuery(),
    responses: { 200: { description: 'API keys', schema: pageOf(ApiKeySummarySchema, 'ApiKeyPage') } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.apiKeys.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toApiKeySummary) };
    },
  }),
  route({
    method: 'delete',
    path: '/admin/workspaces/{workspaceId}/api-keys/{apiKeyId}',
    summary: 'Revoke an API key (operator token): it stops authenticating at once; revoking again is a no-op',
    tags: ['Admin'],
    auth: 'admin',
    params: ApiKeyParams,
    responses: { 204: { description: 'Revoked' } },
    async handle(ctx, { params }) {
      await ctx.state.stores.apiKeys.revoke(params.workspaceId, params.apiKeyId);
      return { status: 204 };
    },
  }),
];
