import { route, type Route } from '../route';
import { accepted, AcceptedSchema, withMessage } from '../schemas/common';
import {
  SystemBody,
  SystemDeploymentLinkSchema,
  SystemDeploymentParams,
  SystemEnvironmentLinkSchema,
  SystemEnvironmentParams,
  SystemParams,
  SystemSchema,
  SystemWithLinksSchema,
  toSystem,
  toSystemWithLinks,
} from '../schemas/system';
import { z } from '../schemas/zod';
import { recordRoutes } from './records';

const tags = ['Systems'];

/** PUT, GET and DELETE of the link between a system and a deployment or an environment. */
function linkRoutes(kind: 'deployment' | 'environment'): Route[] {
  const params = kind === 'deployment' ? SystemDeploymentParams : SystemEnvironmentParams;
  const schema = kind === 'deployment' ? SystemDeploymentLinkSchema : SystemEnvironmentLinkSchema;
  const path = `/workspaces/{workspaceId}/systems/{systemId}/${kind}s/{${kind}Id}`;
  const targetOf = (p: Record<string, string>) => p[`${kind}Id`]!;
  const body = (p: Record<string, string>) => ({ systemId: p.systemId!, [`${kind}Id`]: targetOf(p) });
  const linked = withMessage(
    schema.extend({ id: z.uuid().openapi({ description: 'The system' }) }),
    kind === 'deployment' ? 'SystemDeploymentLinked' : 'SystemEnvironmentLinked',
  );
  return [
    route({
      method: 'put',
      path,
      audit: { record: 'system', action: `system.${kind}_linked` },
      summary: `Link a ${kind} to the system`,
      description: 'Release targets are recomputed for it.',
      tags,
      auth: 'apiKey',
      params,
      responses: { 202: { description: 'Linked (or already linked)', schema: linked } },
      async handle(ctx, { params }) {
        await ctx.state.stores.systems.link(params.workspaceId, params.systemId, kind, targetOf(params));
        return {
          status: 202,
          body: { id: params.systemId, ...body(params), message: `The ${kind} is linked to the system` },
        };
      },
    }),
    route({
      method: 'get',
      path,
      summary: `Whether a ${kind} is linked to the system (404 when not)`,
      tags,
      auth: 'apiKey',
      params,
      responses: { 200: { description: 'The link', schema } },
      async handle(ctx, { params }) {
        await ctx.state.stores.systems.getLink(params.workspaceId, params.systemId, kind, targetOf(params));
        return { status: 200, body: body(params) };
      },
    }),
    route({
      method: 'delete',
      path,
      audit: { record: 'system', action: `system.${kind}_unlinked` },
      summary: `Unlink a ${kind} from the system`,
      tags,
      auth: 'apiKey',
      params,
      responses: { 202: { description: 'Unlinked', schema: AcceptedSchema } },
      async handle(ctx, { params }) {
        await ctx.state.stores.systems.unlink(params.workspaceId, params.systemId, kind, targetOf(params));
        return accepted(params.systemId, `The ${kind} is no longer linked to the system`);
      },
    }),
  ];
}

export const systemRoutes = [
  ...recordRoutes({
    noun: 'system',
    tag: 'Systems',
    collection: '/workspaces/{workspaceId}/systems',
    idParam: 'systemId',
    params: SystemParams,
    body: SystemBody,
    schema: SystemSchema,
    pageName: 'SystemPage',
    acceptedName: 'SystemAccepted',
    creatable: true,
    duplicate: 'Duplicate slug',
    store: (stores) => stores.systems,
    present: async (_, systems) => systems.map(toSystem),
    detail: {
      schema: SystemWithLinksSchema,
      load: async (stores, workspaceId, id) =>
        toSystemWithLinks(await stores.systems.getWithLinks(workspaceId, id)),
    },
  }),
  ...linkRoutes('deployment'),
  ...linkRoutes('environment'),
];
