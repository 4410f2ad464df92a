import type { Deployment } from '../../db/entities';
import type { Stores } from '../../application';
import { route } from '../route';
import { WorkspaceParams } from '../schemas/common';
import { DeploymentBody, DeploymentParams, DeploymentSchema, toDeployment } from '../schemas/deployment';
import { DeploymentDetailSchema, DeploymentListItemSchema } from '../schemas/deploymentDetail';
import { toSystem } from '../schemas/system';
import { toVariableWithValues } from '../schemas/variable';
import { z } from '../schemas/zod';
import { recordRoutes } from './records';

export async function present(stores: Stores, deployments: Deployment[]) {
  const systems = await stores.deployments.systemIds(deployments.map((d) => d.id));
  return deployments.map((deployment) => toDeployment(deployment, systems.get(deployment.id) ?? []));
}

/** Deployments with Ctrlplane's `deployment` and `systems` beside their fields (a list's items). */
async function withSystems(stores: Stores, deployments: Deployment[]) {
  const shown = await present(stores, deployments);
  const systems = await stores.systems.byIds(shown.flatMap((deployment) => deployment.systemIds));
  return shown.map((deployment) => ({
    ...deployment,
    deployment,
    systems: deployment.systemIds.map((systemId) => toSystem(systems.get(systemId)!)),
  }));
}

/** A deployment read alone, with Ctrlplane's `deployment`, `systems` and `variables` beside its fields. */
async function detailOf(stores: Stores, deployment: Deployment) {
  const [shown] = await withSystems(stores, [deployment]);
  const variables = await stores.variables.listVariables(deployment.workspaceId, deployment.id, {
    limit: 1000,
    offset: 0,
  });
  return { ...shown!, variables: variables.items.map(toVariableWithValues) };
}

async function detail(stores: Stores, workspaceId: string, id: string) {
  return detailOf(stores, await stores.deployments.get(workspaceId, id));
}

export const deploymentRoutes = [
  ...recordRoutes({
    noun: 'deployment',
    tag: 'Deployments',
    collection: '/workspaces/{workspaceId}/deployments',
    idParam: 'deploymentId',
    params: DeploymentParams,
    body: DeploymentBody,
    schema: DeploymentSchema,
    pageName: 'DeploymentPage',
    acceptedName: 'DeploymentAccepted',
    creatable: true,
    duplicate: 'Duplicate slug',
    store: (stores) => stores.deployments,
    present,
    detail: { schema: DeploymentDetailSchema, load: detail },
    listItem: { schema: DeploymentListItemSchema, present: withSystems },
    filter: { scope: 'deployment' },
    selectors: (d) => [
      { path: 'resourceSelector', scope: 'resource', expression: d.resourceSelector },
      { path: 'jobAgentSelector', scope: 'jobAgent', expression: d.jobAgentSelector },
      ...d.jobAgents.map((entry, index) => ({
        path: `jobAgents[${index}].selector`,
        scope: 'resource' as const,
        expression: entry.selector,
      })),
    ],
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/name/{name}',
    summary: 'Find a deployment by name',
    tags: ['Deployments'],
    auth: 'apiKey',
    params: WorkspaceParams.extend({ name: z.string().min(1).max(200) }),
    responses: {
      200: { description: 'The deployment, as read by id', schema: DeploymentDetailSchema },
      409: { description: 'Several deployments have that name' },
    },
    async handle(ctx, { params }) {
      const deployment = await ctx.state.stores.deployments.getByName(params.workspaceId, params.name);
      return { status: 200, body: await detailOf(ctx.state.stores, deployment) };
    },
  }),
];
