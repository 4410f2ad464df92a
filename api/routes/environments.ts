import type { Environment } from '../../db/entities';
import type { Stores } from '../../db/stores';
import { selectorContext } from '../../domain/selectors';
import { route } from '../route';
import { WorkspaceParams } from '../schemas/common';
import { EnvironmentBody, EnvironmentParams, EnvironmentSchema, toEnvironment } from '../schemas/environment';
import { z } from '../schemas/zod';
import { recordRoutes } from './records';

export async function present(stores: Stores, environments: Environment[]) {
  const systems = await stores.environments.systemIds(environments.map((e) => e.id));
  return environments.map((environment) => toEnvironment(environment, systems.get(environment.id) ?? []));
}

export const environmentRoutes = [
  ...recordRoutes({
    noun: 'environment',
    tag: 'Environments',
    collection: '/workspaces/{workspaceId}/environments',
    idParam: 'environmentId',
    params: EnvironmentParams,
    body: EnvironmentBody,
    schema: EnvironmentSchema,
    pageName: 'EnvironmentPage',
    creatable: true,
    duplicate: 'Duplicate name',
    store: (stores) => stores.environments,
    present,
    filter: { scope: 'environment', context: (e) => ({ environment: selectorContext.environment(e) }) },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/environments/name/{name}',
    summary: 'Find an environment by name',
    tags: ['Environments'],
    auth: 'apiKey',
    params: WorkspaceParams.extend({ name: z.string().min(1).max(200) }),
    responses: { 200: { description: 'The environment', schema: EnvironmentSchema } },
    async handle(ctx, { params }) {
      const environment = await ctx.state.stores.environments.getByName(params.workspaceId, params.name);
      return { status: 200, body: (await present(ctx.state.stores, [environment]))[0] };
    },
  }),
];
