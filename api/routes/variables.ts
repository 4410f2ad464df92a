import { route } from '../route';
import {
  accepted,
  AcceptedSchema,
  pageOf,
  pageQuery,
  pageResponse,
  upserted,
  upsertResponses,
  withMessage,
} from '../schemas/common';
import { DeploymentParams } from '../schemas/deployment';
import {
  DeploymentVariableParams,
  DeploymentVariableValueParams,
  toVariable,
  toVariableValue,
  toVariableWithValues,
  ValueParams,
  VariableAliasBody,
  VariableBody,
  VariableParams,
  VariableSchema,
  VariableValueAliasBody,
  VariableValueBody,
  VariableValueSchema,
  VariableWithValuesSchema,
} from '../schemas/variable';

const tags = ['Variables'];
const VariableAccepted = withMessage(VariableSchema, 'DeploymentVariableAccepted');
const VariableValueAccepted = withMessage(VariableValueSchema, 'DeploymentVariableValueAccepted');
const variableUpsertResponses = (schema: typeof VariableAccepted | typeof VariableValueAccepted) => ({
  ...upsertResponses(schema),
  409: { description: 'Duplicate key, or the id belongs to another parent' },
});

export const variableRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables',
    summary: 'List the variables of a deployment with their values',
    tags,
    auth: 'apiKey',
    params: DeploymentParams,
    query: pageQuery(),
    responses: {
      200: { description: 'Variables', schema: pageOf(VariableWithValuesSchema, 'DeploymentVariablePage') },
    },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.variables.listVariables(
        params.workspaceId,
        params.deploymentId,
        query,
      );
      return { status: 200, body: pageResponse(page, toVariableWithValues) };
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}',
    summary: 'Create or replace a deployment variable',
    tags,
    auth: 'apiKey',
    params: DeploymentVariableParams,
    body: VariableBody,
    responses: variableUpsertResponses(VariableAccepted),
    async handle(ctx, { params, body }) {
      const result = await ctx.state.stores.variables.upsertVariable(
        params.workspaceId,
        params.deploymentId,
        params.variableId,
        body,
      );
      return upserted(result, toVariable, 'variable');
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/deployment-variables/{variableId}',
    summary: 'Create or replace a deployment variable (the deployment given in the body)',
    tags,
    auth: 'apiKey',
    params: VariableParams,
    body: VariableAliasBody,
    responses: variableUpsertResponses(VariableAccepted),
    async handle(ctx, { params, body }) {
      const { deploymentId, ...input } = body;
      const result = await ctx.state.stores.variables.upsertVariable(
        params.workspaceId,
        deploymentId,
        params.variableId,
        input,
      );
      return upserted(result, toVariable, 'variable');
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}',
    summary: 'Get a deployment variable with its values',
    tags,
    auth: 'apiKey',
    params: DeploymentVariableParams,
    responses: { 200: { description: 'The variable', schema: VariableWithValuesSchema } },
    async handle(ctx, { params }) {
      const found = await ctx.state.stores.variables.getVariable(
        params.workspaceId,
        params.variableId,
        params.deploymentId,
      );
      return { status: 200, body: toVariableWithValues(found) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployment-variables/{variableId}',
    summary: 'Get a deployment variable with its values',
    tags,
    auth: 'apiKey',
    params: VariableParams,
    responses: { 200: { description: 'The variable', schema: VariableWithValuesSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toVariableWithValues(
          await ctx.state.stores.variables.getVariable(params.workspaceId, params.variableId),
        ),
      };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}',
    summary: 'Delete a deployment variable and its values',
    tags,
    auth: 'apiKey',
    params: DeploymentVariableParams,
    responses: { 202: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.variables.deleteVariable(
        params.workspaceId,
        params.variableId,
        params.deploymentId,
      );
      return accepted(params.variableId, 'Variable deleted');
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/deployment-variables/{variableId}',
    summary: 'Delete a deployment variable and its values',
    tags,
    auth: 'apiKey',
    params: VariableParams,
    responses: { 202: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.variables.deleteVariable(params.workspaceId, params.variableId);
      return accepted(params.variableId, 'Variable deleted');
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}/values/{valueId}',
    summary: 'Create or replace a value of a deployment variable',
    description:
      'A literal (`value`, or `literal_value`) or a reference (`reference_value`), with an optional resource selector.',
    tags,
    auth: 'apiKey',
    params: DeploymentVariableValueParams,
    body: VariableValueBody,
    responses: variableUpsertResponses(VariableValueAccepted),
    async handle(ctx, { params, body }) {
      const result = await ctx.state.stores.variables.upsertValue(
        params.workspaceId,
        params.variableId,
        params.valueId,
        body,
        params.deploymentId,
      );
      return upserted(result, toVariableValue, 'variable value');
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/deployment-variable-values/{valueId}',
    summary: 'Create or replace a value of a deployment variable (the variable given in the body)',
    tags,
    auth: 'apiKey',
    params: ValueParams,
    body: VariableValueAliasBody,
    responses: variableUpsertResponses(VariableValueAccepted),
    async handle(ctx, { params, body }) {
      const { deploymentVariableId, ...input } = body;
      const result = await ctx.state.stores.variables.upsertValue(
        params.workspaceId,
        deploymentVariableId,
        params.valueId,
        input,
      );
      return upserted(result, toVariableValue, 'variable value');
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}/values/{valueId}',
    summary: 'Get a value of a deployment variable',
    tags,
    auth: 'apiKey',
    params: DeploymentVariableValueParams,
    responses: { 200: { description: 'The value', schema: VariableValueSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.variables.getVariable(
        params.workspaceId,
        params.variableId,
        params.deploymentId,
      );
      const value = await ctx.state.stores.variables.getValue(
        params.workspaceId,
        params.valueId,
        params.variableId,
      );
      return { status: 200, body: toVariableValue(value) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployment-variable-values/{valueId}',
    summary: 'Get a value of a deployment variable',
    tags,
    auth: 'apiKey',
    params: ValueParams,
    responses: { 200: { description: 'The value', schema: VariableValueSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toVariableValue(await ctx.state.stores.variables.getValue(params.workspaceId, params.valueId)),
      };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}/values/{valueId}',
    summary: 'Delete a value of a deployment variable',
    tags,
    auth: 'apiKey',
    params: DeploymentVariableValueParams,
    responses: { 202: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.variables.getVariable(
        params.workspaceId,
        params.variableId,
        params.deploymentId,
      );
      await ctx.state.stores.variables.deleteValue(params.workspaceId, params.valueId, params.variableId);
      return accepted(params.valueId, 'Variable value deleted');
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/deployment-variable-values/{valueId}',
    summary: 'Delete a value of a deployment variable',
    tags,
    auth: 'apiKey',
    params: ValueParams,
    responses: { 202: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      await ctx.state.stores.variables.deleteValue(params.workspaceId, params.valueId);
      return accepted(params.valueId, 'Variable value deleted');
    },
  }),
];
