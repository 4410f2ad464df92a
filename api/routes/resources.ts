import type { Resource } from '../../db/entities';
import type { Stores } from '../../application';
import { ValidationError } from '../../domain/errors';
import { CelQuery } from '../../domain/selectors';
import { callerWorkspace, route } from '../route';
import {
  accepted,
  AcceptedSchema,
  filteredPageQuery,
  pageOf,
  upserted,
  upsertResponses,
  withMessage,
  WorkspaceParams,
} from '../schemas/common';
import {
  PatchedResourceSchema,
  PatchResourceBody,
  ResourceIdentifierParams,
  ResourceParams,
  ResourceSchema,
  toResource,
  UpsertResourceBody,
} from '../schemas/resource';
import { z } from '../schemas/zod';

const tags = ['Resources'];

/** Resources as the API shows them, with their variables. */
export async function presentResources(stores: Stores, resources: Resource[]) {
  const variables = await stores.resources.variables(resources.map((r) => r.id));
  return resources.map((resource) => toResource(resource, variables.get(resource.id) ?? []));
}

export const resourceRoutes = [
  route({
    method: 'patch',
    path: '/resources/{resourceId}',
    summary: 'Update a resource (fields given are changed; variables given replace all)',
    description: 'The resource must belong to the API key’s workspace. Release targets follow the change.',
    tags,
    auth: 'apiKey',
    params: z.object({ resourceId: z.uuid() }),
    body: PatchResourceBody,
    responses: {
      200: { description: 'Resource updated successfully', schema: PatchedResourceSchema },
      409: { description: 'Another live resource has that identifier' },
    },
    async handle(ctx, { params, body }) {
      const workspaceId = callerWorkspace(ctx);
      const { workspaceId: requested, ...patch } = body;
      if (requested && requested !== workspaceId) {
        throw new ValidationError('A resource cannot move to another workspace', [
          { path: 'body.workspaceId', message: 'must be the workspace the resource belongs to' },
        ]);
      }
      const resource = await ctx.state.stores.resources.patch(workspaceId, params.resourceId, patch);
      const [shown] = await presentResources(ctx.state.stores, [resource]);
      return { status: 200, body: { ...shown, message: 'Resource updated successfully' } };
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/resources/identifier/{identifier}',
    summary: 'Create or replace the resource with this identifier',
    description: 'Release targets are recomputed for this resource only.',
    tags,
    auth: 'apiKey',
    params: ResourceIdentifierParams,
    body: UpsertResourceBody,
    responses: upsertResponses(withMessage(ResourceSchema, 'ResourceAccepted')),
    async handle(ctx, { params, body }) {
      const result = await ctx.state.stores.resources.upsertByIdentifier(
        params.workspaceId,
        params.identifier,
        body,
      );
      const [shown] = await presentResources(ctx.state.stores, [result.record]);
      return upserted(result, () => shown!, 'resource');
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resources/identifier/{identifier}',
    summary: 'Get the live resource with this identifier',
    tags,
    auth: 'apiKey',
    params: ResourceIdentifierParams,
    responses: { 200: { description: 'The resource', schema: ResourceSchema } },
    async handle(ctx, { params }) {
      const resource = await ctx.state.stores.resources.getByIdentifier(
        params.workspaceId,
        params.identifier,
      );
      return { status: 200, body: (await presentResources(ctx.state.stores, [resource]))[0] };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/resources/identifier/{identifier}',
    summary: 'Delete the resource with this identifier (sets deletedAt, removes its release targets)',
    tags,
    auth: 'apiKey',
    params: ResourceIdentifierParams,
    // 200, not the 202 of a delete by id: Ctrlplane's clients expect 200 here (docs/api.md "Conventions").
    responses: { 200: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      const resource = await ctx.state.stores.resources.deleteByIdentifier(
        params.workspaceId,
        params.identifier,
      );
      return { status: 200, body: { id: resource.id, message: 'Resource deleted' } };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resources',
    summary: 'List live resources, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: filteredPageQuery('resource'),
    responses: {
      200: {
        description: 'Resources',
        schema: pageOf(ResourceSchema, 'ResourcePage', { boundedTotal: true }),
      },
    },
    async handle(ctx, { params, query }) {
      const filter = query.cel ? new CelQuery('resource', query.cel) : undefined;
      const page = await ctx.state.stores.resources.list(params.workspaceId, query, filter);
      return { status: 200, body: { ...page, items: await presentResources(ctx.state.stores, page.items) } };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resources/{resourceId}',
    summary: 'Get a resource by id (a deleted one too, with deletedAt set)',
    tags,
    auth: 'apiKey',
    params: ResourceParams,
    responses: { 200: { description: 'The resource', schema: ResourceSchema } },
    async handle(ctx, { params }) {
      const resource = await ctx.state.stores.resources.get(params.workspaceId, params.resourceId);
      return { status: 200, body: (await presentResources(ctx.state.stores, [resource]))[0] };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/resources/{resourceId}',
    summary: 'Delete a resource (sets deletedAt, removes its release targets)',
    tags,
    auth: 'apiKey',
    params: ResourceParams,
    responses: { 202: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.resources.delete(params.workspaceId, params.resourceId);
      return accepted(params.resourceId, 'Resource deleted');
    },
  }),
];
