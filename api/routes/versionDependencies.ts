import { route } from '../route';
import { accepted, AcceptedSchema } from '../schemas/common';
import {
  DependencyBody,
  VersionDependencyParams,
  VersionDependencySchema,
  VersionParams,
} from '../schemas/version';
import { z } from '../schemas/zod';

const tags = ['Versions'];
const one =
  '/workspaces/{workspaceId}/deployment-versions/{deploymentVersionId}/dependencies/{dependencyDeploymentId}';

/**
 * A version's dependencies on other deployments: on each resource, the version deploys only while
 * every dependency's current version there matches its selector (a release waits at its gates).
 */
export const versionDependencyRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployment-versions/{deploymentVersionId}/dependencies',
    summary: "A version's dependencies on other deployments",
    tags,
    auth: 'apiKey',
    params: VersionParams,
    responses: { 200: { description: 'Its dependencies', schema: z.array(VersionDependencySchema) } },
    async handle(ctx, { params }) {
      const dependencies = await ctx.state.stores.versionDependencies.list(
        params.workspaceId,
        params.deploymentVersionId,
      );
      return { status: 200, body: dependencies };
    },
  }),
  route({
    method: 'put',
    path: one,
    summary: 'Declare or change a dependency of a version on another deployment',
    description:
      "The selector is CEL over `version`, checked against the dependency's current version on the same resource. " +
      "A version cannot depend on its own deployment (400). The version's waiting releases evaluate again.",
    tags,
    auth: 'apiKey',
    params: VersionDependencyParams,
    body: DependencyBody,
    responses: { 202: { description: 'Declared', schema: AcceptedSchema } },
    async handle(ctx, { params, body }) {
      await ctx.state.stores.versionDependencies.upsert(
        params.workspaceId,
        params.deploymentVersionId,
        params.dependencyDeploymentId,
        body.versionSelector,
      );
      return accepted(params.dependencyDeploymentId, 'Dependency declared');
    },
  }),
  route({
    method: 'delete',
    path: one,
    summary: 'Remove a dependency of a version',
    tags,
    auth: 'apiKey',
    params: VersionDependencyParams,
    responses: { 202: { description: 'Removed', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.versionDependencies.delete(
        params.workspaceId,
        params.deploymentVersionId,
        params.dependencyDeploymentId,
      );
      return accepted(params.dependencyDeploymentId, 'Dependency removed');
    },
  }),
];
