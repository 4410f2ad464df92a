import { route } from '../route';
import { DeploymentParams } from '../schemas/deployment';
import { DoraQuery, DoraReportSchema } from '../schemas/dora';

/** DORA's four keys for a deployment, per environment and overall (docs/behaviour.md "Delivery metrics"). */
export const doraRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/deployments/{deploymentId}/metrics/dora',
    summary: "A deployment's delivery figures: frequency, lead time, change failure rate, time to restore",
    description:
      'Read from the releases that ended in the window (default 30d): each environment and all of them together.',
    tags: ['Deployments'],
    auth: 'apiKey',
    params: DeploymentParams,
    query: DoraQuery,
    responses: { 200: { description: 'The figures', schema: DoraReportSchema } },
    async handle(ctx, { params, query }) {
      return {
        status: 200,
        body: await ctx.state.stores.dora.report(params.workspaceId, params.deploymentId, query.window),
      };
    },
  }),
];
