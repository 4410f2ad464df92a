import { ValidationError } from '../../domain/errors';
import { CelQuery } from '../../domain/selectors';
import { route } from '../route';
import { pageOf, pageResponse } from '../schemas/common';
import { DeploymentParams } from '../schemas/deployment';
import {
  CreateVersionBody,
  DeploymentVersionSchema,
  toDeploymentVersion,
  UpdateVersionBody,
  VersionListQuery,
  VersionParams,
} from '../schemas/version';

const tags = ['Deployment versions'];

export const versionRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/versions',
    summary: 'Create a deployment version',
    description:
      'A version created with status `ready` (the default) is rolled out at once: one release per release target.',
    tags,
    auth: 'apiKey',
    params: DeploymentParams,
    body: CreateVersionBody,
    responses: {
      200: { description: 'The version', schema: DeploymentVersionSchema },
      409: { description: 'The tag exists for this deployment' },
    },
    async handle(ctx, { params, body }) {
      const created = await ctx.state.stores.versions.create(
        params.workspaceId,
        params.deploymentId,
        body,
        ctx.state.principal,
      );
      return { status: 200, body: toDeploymentVersion(created) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/versions',
    summary: 'List versions of a deployment, newest first',
    tags,
    auth: 'apiKey',
    params: DeploymentParams,
    query: VersionListQuery,
    responses: {
      200: {
        description: 'Versions',
        schema: pageOf(DeploymentVersionSchema, 'DeploymentVersionPage', { boundedTotal: true }),
      },
    },
    async handle(ctx, { params, query }) {
      const { cel, status } = query;
      const page = await ctx.state.stores.versions.list(params.workspaceId, params.deploymentId, query, {
        status,
        ...(cel ? { cel: new CelQuery('version', cel) } : {}),
      });
      return { status: 200, body: pageResponse(page, toDeploymentVersion) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployment-versions/{deploymentVersionId}',
    aliases: ['/workspaces/{workspaceId}/deploymentversions/{deploymentVersionId}'],
    summary: 'Get a deployment version',
    tags,
    auth: 'apiKey',
    params: VersionParams,
    responses: { 200: { description: 'The version', schema: DeploymentVersionSchema } },
    async handle(ctx, { params }) {
      const found = await ctx.state.stores.versions.get(params.workspaceId, params.deploymentVersionId);
      return { status: 200, body: toDeploymentVersion(found) };
    },
  }),
  route({
    method: 'patch',
    path: '/workspaces/{workspaceId}/deployment-versions/{deploymentVersionId}',
    aliases: ['/workspaces/{workspaceId}/deploymentversions/{deploymentVersionId}'],
    summary: 'Update a version, e.g. move it from building to ready',
    description:
      'Allowed status moves: building → ready, building → failed, ready → failed; others answer 409.',
    tags,
    auth: 'apiKey',
    params: VersionParams,
    body: UpdateVersionBody,
    responses: {
      202: { description: 'The updated version', schema: DeploymentVersionSchema },
      409: { description: 'A status move that is not allowed, or a duplicate tag' },
    },
    async handle(ctx, { params, body: { id, ...changes } }) {
      if (id !== undefined && id !== params.deploymentVersionId) {
        throw new ValidationError('The body names another version than the path', [
          { path: 'body.id', message: `must be ${params.deploymentVersionId}, the version this path names` },
        ]);
      }
      const updated = await ctx.state.stores.versions.update(
        params.workspaceId,
        params.deploymentVersionId,
        changes,
      );
      return { status: 202, body: toDeploymentVersion(updated) };
    },
  }),
];
