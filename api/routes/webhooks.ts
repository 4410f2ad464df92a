import { route } from '../route';
import { AcceptedSchema, accepted, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  toWebhook,
  toWebhookDelivery,
  WebhookBody,
  WebhookDeliveryPageSchema,
  WebhookDeliveryParams,
  WebhookDeliverySchema,
  WebhookListQuery,
  WebhookPageSchema,
  WebhookParams,
  WebhookSchema,
  WebhookUpdateBody,
} from '../schemas/webhook';

const tags = ['Webhooks'];

/** Webhooks: the workspace's events POSTed, signed, to a receiver (docs/behaviour.md "Webhooks"). */
export const webhookRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/webhooks',
    summary: 'Send events to a receiver',
    description:
      'Each event is POSTed as JSON signed with `X-Flightdeck-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, ' +
      'at least once: a delivery is retried with backoff for two hours. The secret is never answered.',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: WebhookBody,
    responses: { 201: { description: 'The webhook', schema: WebhookSchema } },
    async handle(ctx, { params, body }) {
      return {
        status: 201,
        body: toWebhook(await ctx.state.stores.webhooks.create(params.workspaceId, body)),
      };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/webhooks',
    summary: 'List webhooks',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: WebhookListQuery,
    responses: { 200: { description: 'Webhooks', schema: WebhookPageSchema } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.webhooks.list(params.workspaceId, query);
      return { status: 200, body: pageResponse(page, toWebhook) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/webhooks/{webhookId}',
    summary: 'Get a webhook',
    tags,
    auth: 'apiKey',
    params: WebhookParams,
    responses: { 200: { description: 'The webhook', schema: WebhookSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toWebhook(await ctx.state.stores.webhooks.get(params.workspaceId, params.webhookId)),
      };
    },
  }),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/webhooks/{webhookId}',
    summary: 'Change a webhook',
    description: 'Fields not sent keep their value; the secret changes only when one is sent.',
    tags,
    auth: 'apiKey',
    params: WebhookParams,
    body: WebhookUpdateBody,
    responses: { 200: { description: 'The webhook', schema: WebhookSchema } },
    async handle(ctx, { params, body }) {
      return {
        status: 200,
        body: toWebhook(await ctx.state.stores.webhooks.update(params.workspaceId, params.webhookId, body)),
      };
    },
  }),
  route({
    method: 'delete',
    path: '/workspaces/{workspaceId}/webhooks/{webhookId}',
    summary: 'Delete a webhook and its delivery log',
    tags,
    auth: 'apiKey',
    params: WebhookParams,
    responses: { 202: { description: 'Deleted', schema: AcceptedSchema } },
    async handle(ctx, { params }) {
      const webhook = await ctx.state.stores.webhooks.delete(params.workspaceId, params.webhookId);
      return accepted(webhook.id, 'Webhook deleted');
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/webhooks/{webhookId}/deliveries',
    summary: "A webhook's deliveries, newest first",
    description: 'Each with its status, attempts, the last answer’s status code and time, and the body sent.',
    tags,
    auth: 'apiKey',
    params: WebhookParams,
    query: WebhookListQuery,
    responses: { 200: { description: 'Deliveries', schema: WebhookDeliveryPageSchema } },
    async handle(ctx, { params, query }) {
      const page = await ctx.state.stores.webhooks.deliveries(params.workspaceId, params.webhookId, query);
      return { status: 200, body: pageResponse(page, toWebhookDelivery) };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver',
    summary: 'Send a delivery’s event again',
    description: 'A new delivery of the same body and event id.',
    tags,
    auth: 'apiKey',
    params: WebhookDeliveryParams,
    responses: { 202: { description: 'The new delivery', schema: WebhookDeliverySchema } },
    async handle(ctx, { params }) {
      const delivery = await ctx.state.stores.webhooks.redeliver(
        params.workspaceId,
        params.webhookId,
        params.deliveryId,
      );
      return { status: 202, body: toWebhookDelivery(delivery) };
    },
  }),
];
