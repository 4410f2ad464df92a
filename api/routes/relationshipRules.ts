import { route } from '../route';
import { pageOf, pageQuery, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  RelationshipRuleBody,
  RelationshipRuleParams,
  RelationshipRuleSchema,
  toRelationshipRule,
} from '../schemas/relationshipRule';

const tags = ['Relationship rules'];
const one = '/workspaces/{workspaceId}/relationship-rules/{relationshipRuleId}';

/**
 * Ctrlplane's relationship rules: a variable value `{reference: <rule's reference>, path}` reads a
 * field of the resource the rule relates to the release target's resource, when jobs are created.
 */
export const relationshipRuleRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/relationship-rules',
    summary: 'List relationship rules, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: pageQuery(),
    responses: {
      200: { description: 'Rules', schema: pageOf(RelationshipRuleSchema, 'RelationshipRulePage') },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.relationshipRules.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toRelationshipRule) };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/relationship-rules',
    summary: 'Create a relationship rule',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: RelationshipRuleBody,
    responses: { 201: { description: 'The rule', schema: RelationshipRuleSchema } },
    async handle(ctx, { params, body }) {
      return {
        status: 201,
        body: toRelationshipRule(await ctx.state.stores.relationshipRules.create(params.workspaceId, body)),
      };
    },
  }),
  route({
    method: 'get',
    path: one,
    summary: 'Get a relationship rule',
    tags,
    auth: 'apiKey',
    params: RelationshipRuleParams,
    responses: { 200: { description: 'The rule', schema: RelationshipRuleSchema } },
    async handle(ctx, { params }) {
      const rule = await ctx.state.stores.relationshipRules.get(
        params.workspaceId,
        params.relationshipRuleId,
      );
      return { status: 200, body: toRelationshipRule(rule) };
    },
  }),
  route({
    method: 'put',
    path: one,
    summary: 'Create or replace the relationship rule with this id',
    tags,
    auth: 'apiKey',
    params: RelationshipRuleParams,
    body: RelationshipRuleBody,
    responses: { 202: { description: 'The rule', schema: RelationshipRuleSchema } },
    async handle(ctx, { params, body }) {
      const { record } = await ctx.state.stores.relationshipRules.upsert(
        params.workspaceId,
        params.relationshipRuleId,
        body,
      );
      return { status: 202, body: toRelationshipRule(record) };
    },
  }),
  route({
    method: 'delete',
    path: one,
    summary: 'Delete a relationship rule',
    tags,
    auth: 'apiKey',
    params: RelationshipRuleParams,
    responses: { 202: { description: 'The deleted rule', schema: RelationshipRuleSchema } },
    async handle(ctx, { params }) {
      const rule = await ctx.state.stores.relationshipRules.delete(
        params.workspaceId,
        params.relationshipRuleId,
      );
      return { status: 202, body: toRelationshipRule(rule) };
    },
  }),
];
