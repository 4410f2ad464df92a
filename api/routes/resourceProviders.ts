import { route } from '../route';
import { pageOf, pageQuery, WorkspaceParams } from '../schemas/common';
import { ResourceSchema } from '../schemas/resource';
import {
  PROVIDER_SET_BODY,
  ProviderSetAcceptedSchema,
  ResourceProviderNameParams,
  ResourceProviderParams,
  ResourceProviderSchema,
  SetProviderResourcesBody,
  toResourceProvider,
  UpsertResourceProviderBody,
} from '../schemas/resourceProvider';
import { presentResources } from './resources';

const tags = ['Resource providers'];

export const resourceProviderRoutes = [
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/resource-providers',
    summary: 'Create the resource provider with this name, or find it',
    description:
      'Keyed by name: a provider of that name keeps its id (and its metadata unless `metadata` is given). An `id` naming one of the workspace’s providers under another name renames it, keeping its resources.',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: UpsertResourceProviderBody,
    responses: {
      202: { description: 'The provider', schema: ResourceProviderSchema },
      409: { description: 'The id given belongs to another provider, or the new name to another' },
    },
    async handle(ctx, { params, body }) {
      const { record, created } = await ctx.state.stores.resourceProviders.upsertByName(
        params.workspaceId,
        body,
      );
      return { status: 202, body: toResourceProvider(record), created };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resource-providers/name/{name}',
    summary: 'Get a resource provider by name',
    tags,
    auth: 'apiKey',
    params: ResourceProviderNameParams,
    responses: { 200: { description: 'The provider', schema: ResourceProviderSchema } },
    async handle(ctx, { params }) {
      const provider = await ctx.state.stores.resourceProviders.getByName(params.workspaceId, params.name);
      return { status: 200, body: toResourceProvider(provider) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resource-providers/name/{name}/resources',
    summary: "List a resource provider's live resources, oldest first",
    tags,
    auth: 'apiKey',
    params: ResourceProviderNameParams,
    query: pageQuery(),
    responses: {
      200: { description: 'Resources', schema: pageOf(ResourceSchema, 'ProviderResourcePage') },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.resourceProviders.resources(params.workspaceId, params.name, query);
      return { status: 200, body: { ...page, items: await presentResources(ctx.state.stores, page.items) } };
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/resource-providers/{providerId}/set',
    summary: "Make the provider's resources exactly these, in one transaction",
    description:
      'Each identifier creates a resource or replaces the live one (keeping its id; the provider takes it over from any other owner); the provider’s resources left out are deleted with their release targets. Release targets follow. Up to 100,000 resources (a body of up to 64 MB, whatever the configured body limit); timestamps sent with them are ignored.',
    tags,
    auth: 'apiKey',
    params: ResourceProviderParams,
    body: SetProviderResourcesBody,
    largeBody: PROVIDER_SET_BODY,
    responses: { 202: { description: 'The set is applied', schema: ProviderSetAcceptedSchema } },
    async handle(ctx, { params, body }) {
      const outcome = await ctx.state.stores.resources.setForProvider(
        params.workspaceId,
        params.providerId,
        body.resources,
      );
      return { status: 202, body: { ok: true, method: 'set', ...outcome } };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/resource-providers/name/{name}',
    summary: 'Delete a resource provider that owns no live resource',
    description:
      'A provider that still owns resources is refused with 400 (`provider_in_use`): set them to none first.',
    tags,
    auth: 'apiKey',
    params: ResourceProviderNameParams,
    responses: {
      202: { description: 'Deleted; the provider as it was', schema: ResourceProviderSchema },
      400: {
        description: 'The provider still owns resources (`provider_in_use`), or the request is invalid',
      },
    },
    async handle(ctx, { params }) {
      const provider = await ctx.state.stores.resourceProviders.deleteByName(params.workspaceId, params.name);
      return { status: 202, body: toResourceProvider(provider) };
    },
  }),
];
