import { route } from '../route';
import { pageResponse, WorkspaceParams } from '../schemas/common';
import {
  toWorkspaceSecret,
  WorkspaceSecretBody,
  WorkspaceSecretListQuery,
  WorkspaceSecretPageSchema,
  WorkspaceSecretParams,
  WorkspaceSecretSchema,
} from '../schemas/workspaceSecret';

const tags = ['Workspace secrets'];

/**
 * Workspace secrets: credentials that credential fields reference as `secret://<name>` (docs/security.md
 * "Workspace secrets").
 */
export const workspaceSecretRoutes = [
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/secrets/{name}',
    summary: 'Write a workspace secret',
    description:
      'Creates the secret (201) or replaces its value (200), keeping where it may be sent. The value is never answered.',
    tags,
    auth: 'apiKey',
    params: WorkspaceSecretParams,
    body: WorkspaceSecretBody,
    responses: {
      200: { description: 'Its value replaced', schema: WorkspaceSecretSchema },
      201: { description: 'Created', schema: WorkspaceSecretSchema },
    },
    async handle(ctx, { params, body }) {
      const secret = await ctx.state.stores.workspaceSecrets.put(params.workspaceId, params.name, body.value);
      return { status: secret.created ? 201 : 200, body: toWorkspaceSecret(secret) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/secrets',
    summary: 'List workspace secrets, by name',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: WorkspaceSecretListQuery,
    responses: { 200: { description: 'Secrets, without their values', schema: WorkspaceSecretPageSchema } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.workspaceSecrets.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toWorkspaceSecret) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/secrets/{name}',
    summary: 'Get a workspace secret, without its value',
    tags,
    auth: 'apiKey',
    params: WorkspaceSecretParams,
    responses: { 200: { description: 'The secret', schema: WorkspaceSecretSchema } },
    async handle(ctx, { params }) {
      const secret = await ctx.state.stores.workspaceSecrets.get(params.workspaceId, params.name);
      return { status: 200, body: toWorkspaceSecret(secret) };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/secrets/{name}',
    summary: 'Delete a workspace secret',
    description:
      'References to it fail where they are used (a measurement fails, a job ends `invalid_job_agent`) until a secret of that name is written again, bound anew.',
    tags,
    auth: 'apiKey',
    params: WorkspaceSecretParams,
    responses: { 200: { description: 'The deleted secret', schema: WorkspaceSecretSchema } },
    async handle(ctx, { params }) {
      const secret = await ctx.state.stores.workspaceSecrets.delete(params.workspaceId, params.name);
      return { status: 200, body: toWorkspaceSecret(secret) };
    },
  }),
];
