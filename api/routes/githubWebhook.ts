import { route } from '../route';
import { z } from '../schemas/zod';

const WebhookParams = z.object({ workspaceId: z.uuid(), jobAgentId: z.uuid() });

const WorkflowRunEventBody = z
  .looseObject({
    action: z.string().optional(),
    workflow_run: z
      .looseObject({
        id: z.number().int(),
        name: z.string().nullish(),
        display_title: z.string().optional(),
        status: z.string().nullable(),
        conclusion: z.string().nullable(),
        html_url: z.string(),
      })
      .optional(),
  })
  .openapi('GithubWorkflowRunEvent');

const WebhookResultSchema = z
  .object({
    handled: z.boolean(),
    jobId: z.uuid().optional(),
    status: z.string().optional(),
    reason: z.string().optional(),
  })
  .openapi('GithubWebhookResult');

export const githubWebhookRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/job-agents/{jobAgentId}/github/webhook',
    summary: "GitHub's workflow_run webhook for a github-app agent",
    description:
      "Set it as the repository (or app) webhook, content type application/json, with the agent's webhook_secret. " +
      'No API key: X-Hub-Signature-256 authenticates the delivery (401 when it does not match). A run moves the job ' +
      'whose id its title carries; other events are acknowledged and ignored.',
    tags: ['Job agents'],
    auth: 'none',
    params: WebhookParams,
    body: WorkflowRunEventBody,
    responses: {
      202: { description: 'Received', schema: WebhookResultSchema },
      401: { description: 'The signature does not match' },
      404: { description: 'No github-app agent with a webhook secret here' },
    },
    async handle(ctx, { params, body }) {
      const outcome = await ctx.state.stores.githubWebhooks.receive(params.workspaceId, params.jobAgentId, {
        event: ctx.get('x-github-event') || undefined,
        signature: ctx.get('x-hub-signature-256') || undefined,
        rawBody: (ctx.request as { rawBody?: string }).rawBody ?? '',
        payload: body,
      });
      return { status: 202, body: outcome };
    },
  }),
];
