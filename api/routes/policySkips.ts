import { route } from '../route';
import { pageResponse, WorkspaceParams } from '../schemas/common';
import {
  PolicySkipBody,
  PolicySkipListQuery,
  PolicySkipPageSchema,
  PolicySkipParams,
  PolicySkipSchema,
  toPolicySkip,
} from '../schemas/policySkip';

const tags = ['Policy skips'];

/**
 * Policy skips: let one version's releases pass one gate rule on a scope until a time, with a reason
 * and who asked (docs/behaviour.md "Policy skips").
 */
export const policySkipRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/policy-skips',
    summary: "Let a version's releases pass one policy rule until the skip expires",
    description:
      "The rule is a gate rule of one of the workspace's policies (400 for a retry or verification rule), or a hold's id (a break-glass); 404 otherwise. " +
      'Scoped to an environment, a resource, or every target of the version. The releases it may let go evaluate at once; ' +
      'explain and their history say "skipped by <key> until <time>: <reason>".',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: PolicySkipBody,
    responses: { 201: { description: 'The skip', schema: PolicySkipSchema } },
    async handle(ctx, { params, body }) {
      const skip = await ctx.state.stores.policySkips.create(params.workspaceId, ctx.state.principal!, body);
      return { status: 201, body: toPolicySkip(skip) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/policy-skips',
    summary: 'List policy skips, newest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: PolicySkipListQuery,
    responses: { 200: { description: 'Policy skips', schema: PolicySkipPageSchema } },
    async handle(ctx, { params, query }) {
      const { limit, offset, ...filter } = query;
      const page = await ctx.state.stores.policySkips.list(params.workspaceId, filter, { limit, offset });
      return { status: 200, body: pageResponse(page, (skip) => toPolicySkip(skip)) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/policy-skips/{policySkipId}',
    summary: 'Get a policy skip',
    tags,
    auth: 'apiKey',
    params: PolicySkipParams,
    responses: { 200: { description: 'The skip', schema: PolicySkipSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toPolicySkip(await ctx.state.stores.policySkips.get(params.workspaceId, params.policySkipId)),
      };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/policy-skips/{policySkipId}',
    summary: 'Delete a policy skip: the rule counts again',
    description: 'The releases it let pass that have not started their jobs evaluate again.',
    tags,
    auth: 'apiKey',
    params: PolicySkipParams,
    responses: { 200: { description: 'The deleted skip', schema: PolicySkipSchema } },
    async handle(ctx, { params }) {
      const skip = await ctx.state.stores.policySkips.delete(params.workspaceId, params.policySkipId);
      return { status: 200, body: toPolicySkip(skip) };
    },
  }),
];
