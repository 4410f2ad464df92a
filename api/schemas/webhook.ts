import type { Webhook, WebhookDelivery } from '../../db/entities';
import { WEBHOOK_EVENTS } from '../../domain/audit';
import { displayText } from '../../domain/displayText';
import { iso, isoOrNull, pageOf, pageQuery, WorkspaceParams } from './common';
import { z } from './zod';

const withoutCredentials = (url: URL) => !url.username && !url.password;

const WebhookUrl = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  // Refinements run after a failed format check too: only a URL that parses is looked into.
  .refine((url) => !URL.canParse(url) || withoutCredentials(new URL(url)), 'must not carry credentials')
  .openapi({
    description:
      'Where events are POSTed (http or https). Sent through the webhooks’ egress policy: private and loopback ' +
      'addresses are refused unless FLIGHTDECK_WEBHOOK_EGRESS_ALLOW names them',
    example: 'https://hooks.example.com/flightdeck',
  });

const Events = z
  .array(z.enum(WEBHOOK_EVENTS))
  .min(1)
  .max(WEBHOOK_EVENTS.length)
  .refine((events) => new Set(events).size === events.length, 'must not repeat an event')
  .openapi({ description: 'The events sent to it' });

const Description = displayText(z.string().max(1000), 'multi').nullish();

const Secret = z.string().min(16).max(256).openapi({
  description:
    'The key of the HMAC-SHA256 each body is signed with (X-Flightdeck-Signature-256: sha256=<hex>); write-only',
});

export const WebhookBody = z
  .strictObject({
    url: WebhookUrl,
    events: Events,
    secret: Secret,
    description: Description,
  })
  .openapi('WebhookInput');

export const WebhookUpdateBody = z
  .strictObject({
    url: WebhookUrl.optional(),
    events: Events.optional(),
    secret: Secret.optional(),
    description: Description,
  })
  .openapi('WebhookUpdate');

export const WebhookParams = WorkspaceParams.extend({ webhookId: z.uuid() });
export const WebhookDeliveryParams = WebhookParams.extend({ deliveryId: z.uuid() });
export const WebhookListQuery = pageQuery();

export const WebhookSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Webhook');

export const WebhookPageSchema = pageOf(WebhookSchema, 'WebhookPage');

export function toWebhook(webhook: Webhook): z.infer<typeof WebhookSchema> {
  return {
    id: webhook.id,
    workspaceId: webhook.workspaceId,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description ?? null,
    createdAt: iso(webhook.createdAt),
    updatedAt: iso(webhook.updatedAt),
  };
}

const AttemptSchema = z
  .object({
    at: z.string(),
    responseStatus: z.number().int().nullable(),
    durationMs: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'How long the answer took; null without one' }),
    error: z
      .string()
      .nullable()
      .openapi({
        description:
          'Why it did not deliver: `refused by policy` (the egress policy refused the address), `failed` (no ' +
          'answer: nothing more is told of a connection that failed), or the status the receiver answered',
      }),
  })
  .openapi('WebhookDeliveryAttempt');

export const WebhookDeliverySchema = z
  .object({
    id: z.uuid(),
    webhookId: z.uuid(),
    eventId: z
      .uuid()
      .openapi({ description: 'The event’s id, the same in every delivery of it: dedupe on it' }),
    eventType: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    responseStatus: z.number().int().nullable().openapi({ description: 'The last attempt’s answer' }),
    durationMs: z.number().int().nullable(),
    error: z.string().nullable(),
    attemptLog: z.array(AttemptSchema).openapi({ description: 'The latest attempts, oldest first' }),
    redeliveryOf: z.uuid().nullable(),
    payload: z.record(z.string(), z.unknown()).openapi({ description: 'The body sent' }),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .openapi('WebhookDelivery');

export const WebhookDeliveryPageSchema = pageOf(WebhookDeliverySchema, 'WebhookDeliveryPage');

export function toWebhookDelivery(delivery: WebhookDelivery): z.infer<typeof WebhookDeliverySchema> {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    responseStatus: delivery.responseStatus ?? null,
    durationMs: delivery.durationMs ?? null,
    error: delivery.error ?? null,
    attemptLog: delivery.attemptLog,
    redeliveryOf: delivery.redeliveryOf ?? null,
    payload: delivery.payload,
    createdAt: iso(delivery.createdAt),
    completedAt: isoOrNull(delivery.completedAt),
  };
}
