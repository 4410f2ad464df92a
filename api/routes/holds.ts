import { route } from '../route';
import { pageResponse, WorkspaceParams } from '../schemas/common';
import { HoldBody, HoldListQuery, HoldPageSchema, HoldParams, HoldSchema, toHold } from '../schemas/hold';

const tags = ['Holds'];

/**
 * Holds: stop (block) or keep (pin) the release targets a selector matches, a freeze when scheduled
 * (docs/behaviour.md "Holds and freezes").
 */
export const holdRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/holds',
    summary: 'Block or pin the release targets a selector matches',
    description:
      'block: no new job starts on them (their releases wait with the reason) and their queued jobs are kept from ' +
      'polls and claims (409); running jobs go on. pin: they converge to `versionId` and no other version starts there. ' +
      'With a schedule, a block is in force only inside its windows (a freeze). A policy skip whose ruleId is the ' +
      "hold's id lets one version past it (break-glass).",
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: HoldBody,
    responses: { 201: { description: 'The hold', schema: HoldSchema } },
    async handle(ctx, { params, body }) {
      const hold = await ctx.state.stores.holds.create(params.workspaceId, ctx.state.principal!, body);
      return { status: 201, body: toHold(hold) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/holds',
    summary: 'List holds, newest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: HoldListQuery,
    responses: { 200: { description: 'Holds', schema: HoldPageSchema } },
    async handle(ctx, { params, query }) {
      const { limit, offset, ...filter } = query;
      const page = await ctx.state.stores.holds.list(params.workspaceId, filter, { limit, offset });
      return { status: 200, body: pageResponse(page, (hold) => toHold(hold)) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/holds/{holdId}',
    summary: 'Get a hold',
    tags,
    auth: 'apiKey',
    params: HoldParams,
    responses: { 200: { description: 'The hold', schema: HoldSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toHold(await ctx.state.stores.holds.get(params.workspaceId, params.holdId)),
      };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/holds/{holdId}',
    summary: 'Delete a hold: what it held goes on',
    description:
      'Its queued jobs can be claimed again and its releases evaluate again; after a pin, the newest version proceeds.',
    tags,
    auth: 'apiKey',
    params: HoldParams,
    responses: { 200: { description: 'The deleted hold', schema: HoldSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toHold(await ctx.state.stores.holds.delete(params.workspaceId, params.holdId)),
      };
    },
  }),
];
