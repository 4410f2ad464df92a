import { route } from '../route';
import { pageOf, pageQuery, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  toVariableSet,
  toVariableSetWithVariables,
  VariableSetBody,
  VariableSetParams,
  VariableSetSchema,
  VariableSetUpdateBody,
  VariableSetWithVariablesSchema,
} from '../schemas/variableSet';

const tags = ['Variable sets'];
const collection = '/workspaces/{workspaceId}/variable-sets';
const one = `${collection}/{variableSetId}`;

/** Ctrlplane's variable sets, with its status codes: POST 201, PUT (a partial update) and DELETE 202. */
export const variableSetRoutes = [
  route({
    method: 'get',
    path: collection,
    summary: 'List variable sets with their variables, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: pageQuery(),
    responses: {
      200: {
        description: 'Variable sets',
        schema: pageOf(VariableSetWithVariablesSchema, 'VariableSetPage'),
      },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.variableSets.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toVariableSetWithVariables) };
    },
  }),
  route({
    method: 'post',
    path: collection,
    summary: 'Create a variable set',
    description:
      'Its variables reach every job created from then on for a release target its selector matches, ' +
      'beneath the resource’s own variables and the deployment variable values that match.',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: VariableSetBody,
    responses: { 201: { description: 'The variable set', schema: VariableSetSchema } },
    async handle(ctx, { params, body }) {
      const created = await ctx.state.stores.variableSets.create(params.workspaceId, body);
      return { status: 201, body: toVariableSet(created.set) };
    },
  }),
  route({
    method: 'get',
    path: one,
    summary: 'Get a variable set with its variables',
    tags,
    auth: 'apiKey',
    params: VariableSetParams,
    responses: { 200: { description: 'The variable set', schema: VariableSetWithVariablesSchema } },
    async handle(ctx, { params }) {
      const found = await ctx.state.stores.variableSets.get(params.workspaceId, params.variableSetId);
      return { status: 200, body: toVariableSetWithVariables(found) };
    },
  }),
  route({
    method: 'put',
    path: one,
    summary: 'Update a variable set',
    description: 'Fields left out keep their values; `variables`, when given, replaces them all.',
    tags,
    auth: 'apiKey',
    params: VariableSetParams,
    body: VariableSetUpdateBody,
    responses: { 202: { description: 'The variable set', schema: VariableSetSchema } },
    async handle(ctx, { params, body }) {
      const updated = await ctx.state.stores.variableSets.update(
        params.workspaceId,
        params.variableSetId,
        body,
      );
      return { status: 202, body: toVariableSet(updated.set) };
    },
  }),
  route({
    method: 'delete',
    path: one,
    summary: 'Delete a variable set',
    tags,
    auth: 'apiKey',
    params: VariableSetParams,
    responses: { 202: { description: 'The deleted variable set', schema: VariableSetSchema } },
    async handle(ctx, { params }) {
      const deleted = await ctx.state.stores.variableSets.delete(params.workspaceId, params.variableSetId);
      return { status: 202, body: toVariableSet(deleted) };
    },
  }),
];
