import { route } from '../route';
import {
  accepted,
  AcceptedSchema,
  pageOf,
  pageQuery,
  pageResponse,
  WorkspaceParams,
} from '../schemas/common';
import { DeploymentSchema } from '../schemas/deployment';
import { ReleaseTargetSchema, toReleaseTarget } from '../schemas/releaseTarget';
import { ResourceIdentifierParams, ResourceSchema, ResourceVariablesBody } from '../schemas/resource';
import {
  PreviewQuery,
  ResourcePreviewBody,
  ResourceSearchBody,
  ResourceTargetParams,
  ResourceVariableItemSchema,
  TargetPreviewSchema,
  toResourceVariable,
} from '../schemas/resourceLookups';
import { toSystem } from '../schemas/system';
import { present as presentDeployments } from './deployments';
import { present as presentEnvironments } from './environments';
import { presentResources } from './resources';

const tags = ['Resources'];

/** Ctrlplane's reads around one resource: its would-be targets, deployments, variables; and search. */
export const resourceLookupRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/release-targets/resource-preview',
    audit: false,
    summary: 'The release targets a resource would get, without writing it',
    description:
      'Selectors and system links are evaluated as a resource write would evaluate them; nothing is stored.',
    tags: ['Release targets'],
    auth: 'apiKey',
    params: WorkspaceParams,
    query: PreviewQuery,
    body: ResourcePreviewBody,
    responses: {
      200: { description: 'Would-be targets', schema: pageOf(TargetPreviewSchema, 'TargetPreviewPage') },
    },
    async handle(ctx, { params, query, body }) {
      const page = await ctx.state.stores.resourceLookups.preview(params.workspaceId, body, query);
      const deployments = await presentDeployments(
        ctx.state.stores,
        page.items.map((item) => item.deployment),
      );
      const environments = await presentEnvironments(
        ctx.state.stores,
        page.items.map((item) => item.environment),
      );
      return {
        status: 200,
        body: {
          ...page,
          items: page.items.map((item, index) => ({
            system: toSystem(item.system),
            deployment: deployments[index]!,
            environment: environments[index]!,
          })),
        },
      };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resources/identifier/{identifier}/deployments',
    summary: 'The deployments a resource is a release target of',
    tags,
    auth: 'apiKey',
    params: ResourceIdentifierParams,
    query: pageQuery(),
    responses: {
      200: { description: 'Deployments', schema: pageOf(DeploymentSchema, 'ResourceDeploymentPage') },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.resourceLookups.deploymentsOf(
        params.workspaceId,
        params.identifier,
        query,
      );
      return {
        status: 200,
        body: { ...page, items: await presentDeployments(ctx.state.stores, page.items) },
      };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resources/identifier/{identifier}/variables',
    summary: "A resource's variables",
    tags,
    auth: 'apiKey',
    params: ResourceIdentifierParams,
    query: pageQuery(),
    responses: {
      200: {
        description: 'Variables, by key',
        schema: pageOf(ResourceVariableItemSchema, 'ResourceVariablePage'),
      },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.resourceLookups.variablesOf(
        params.workspaceId,
        params.identifier,
        query,
      );
      return { status: 200, body: pageResponse(page, toResourceVariable) };
    },
  }),
  route({
    method: 'patch',
    path: '/workspaces/{workspaceId}/resources/identifier/{identifier}/variables',
    audit: { record: 'resource', action: 'resource.variables_updated' },
    summary: "Replace a resource's variables",
    description:
      'The variables become exactly those sent: keys not sent are removed. `{"sensitive": true}` as a value keeps ' +
      'the stored sensitive value. Jobs created from now on resolve the new values.',
    tags,
    auth: 'apiKey',
    params: ResourceIdentifierParams,
    body: ResourceVariablesBody,
    responses: { 202: { description: 'Replaced', schema: AcceptedSchema } },
    async handle(ctx, { params, body }) {
      const resource = await ctx.state.stores.resources.setVariables(
        params.workspaceId,
        params.identifier,
        body,
      );
      return accepted(resource.id, 'Resource variables replaced');
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/resources/search',
    audit: false,
    summary: 'Search resources by identifiers, kinds, versions, providers, metadata and text',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: ResourceSearchBody,
    responses: {
      200: { description: 'Matching resources', schema: pageOf(ResourceSchema, 'ResourceSearchPage') },
    },
    async handle(ctx, { params, body }) {
      const page = await ctx.state.stores.resourceLookups.search(params.workspaceId, body);
      return { status: 200, body: { ...page, items: await presentResources(ctx.state.stores, page.items) } };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/resources/{resourceIdentifier}/release-targets/deployment/{deploymentId}',
    summary: "A resource's release target in a deployment (by the resource's identifier)",
    tags: ['Release targets'],
    auth: 'apiKey',
    params: ResourceTargetParams,
    responses: { 200: { description: 'The release target', schema: ReleaseTargetSchema } },
    async handle(ctx, { params }) {
      const target = await ctx.state.stores.resourceLookups.targetInDeployment(
        params.workspaceId,
        params.resourceIdentifier,
        params.deploymentId,
      );
      return { status: 200, body: toReleaseTarget(target) };
    },
  }),
];
