import type { Environment } from '../../db/entities';
import type { Stores } from '../../application';
import { route } from '../route';
import { WorkspaceParams } from '../schemas/common';
import { EnvironmentBody, EnvironmentParams } from '../schemas/environment';
import { EnvironmentWithSystemsSchema, toEnvironmentWithSystems } from '../schemas/system';
import { z } from '../schemas/zod';
import { recordRoutes } from './records';

export async function present(stores: Stores, environments: Environment[]) {
  const systemIds = await stores.environments.systemIds(environments.map((e) => e.id));
  const systems = await stores.systems.byIds([...systemIds.values()].flat());
  return environments.map((environment) =>
    toEnvironmentWithSystems(
      environment,
      (systemIds.get(environment.id) ?? []).map((id) => systems.get(id)!),
    ),
  );
}

export const environmentRoutes = [
  ...recordRoutes({
    noun: 'environment',
    tag: 'Environments',
    collection: '/workspaces/{workspaceId}/environments',
    idParam: 'environmentId',
    params: EnvironmentParams,
    body: EnvironmentBody,
    schema: EnvironmentWithSystemsSchema,
    pageName: 'EnvironmentPage',
    acceptedName: 'EnvironmentAccepted',
    creatable: true,
    duplicate: 'Duplicate name',
    store: (stores) => stores.environments,
    present,
    filter: { scope: 'environment' },
    selectors: (e) => [{ path: 'resourceSelector', scope: 'resource', expression: e.resourceSelector }],
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/environments/name/{name}',
    summary: 'Find an environment by name',
    tags: ['Environments'],
    auth: 'apiKey',
    params: WorkspaceParams.extend({ name: z.string().min(1).max(200) }),
    responses: { 200: { description: 'The environment', schema: EnvironmentWithSystemsSchema } },
    async handle(ctx, { params }) {
      const environment = await ctx.state.stores.environments.getByName(params.workspaceId, params.name);
      return { status: 200, body: (await present(ctx.state.stores, [environment]))[0] };
    },
  }),
];
