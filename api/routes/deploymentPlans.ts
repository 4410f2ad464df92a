import { route } from '../route';
import { DeploymentParams } from '../schemas/deployment';
import {
  CreatePlanBody,
  DeploymentPlanParams,
  DeploymentPlanSchema,
  toDeploymentPlan,
} from '../schemas/deploymentPlan';

const tags = ['Deployments'];

/** Ctrlplane's deployment plans: what a version would change on each target, before it exists. */
export const deploymentPlanRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/plan',
    audit: false,
    summary: 'Plan a proposed version: what each target’s jobs would be given, against what they run now',
    description:
      'Computed at once, for at most 1,000 targets, and kept for GET; no version, release or job is created. ' +
      'Secrets show as {"sensitive": true}.',
    tags,
    auth: 'apiKey',
    params: DeploymentParams,
    body: CreatePlanBody,
    responses: { 200: { description: 'The plan', schema: DeploymentPlanSchema } },
    async handle(ctx, { params, body }) {
      const plan = await ctx.state.stores.deploymentPlans.create(
        params.workspaceId,
        params.deploymentId,
        body.version,
        body.metadata,
      );
      return { status: 200, body: toDeploymentPlan(plan) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/plan/{planId}',
    summary: 'Get a deployment plan',
    tags,
    auth: 'apiKey',
    params: DeploymentPlanParams,
    responses: { 200: { description: 'The plan', schema: DeploymentPlanSchema } },
    async handle(ctx, { params }) {
      const plan = await ctx.state.stores.deploymentPlans.get(
        params.workspaceId,
        params.deploymentId,
        params.planId,
      );
      return { status: 200, body: toDeploymentPlan(plan) };
    },
  }),
];
