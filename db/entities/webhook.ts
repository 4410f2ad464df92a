import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

const p = defineEntity.properties;

/** A receiver of the workspace's events (docs/behaviour.md "Webhooks"); its secret is sealed. */
export const WebhookSchema = defineEntity({
  name: 'Webhook',
  tableName: 'webhook',
  properties: {
    ...workspaceScoped(),
    url: p.text(),
    events: p.json<string[]>(),
    secret: p.text(),
    description: p.text().nullable(),
    ...timestamps(),
  },
});
export type Webhook = InferEntity<typeof WebhookSchema>;

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One attempt to send an event to a webhook, as the delivery log shows it. */
export interface DeliveryAttempt {
  at: string;
  responseStatus: number | null;
  /** How long the answer took; null when none came (activities/webhook.ts says why). */
  durationMs: number | null;
  error: string | null;
}

/** One event for one webhook: written by the statement that wrote the event (Migration0033). */
export const WebhookDeliverySchema = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_delivery',
  properties: {
    id: p.uuid().primary(),
    webhookId: p.uuid(),
    workspaceId: p.uuid(),
    eventId: p.uuid(),
    eventType: p.text(),
    payload: p.json<Record<string, unknown>>(),
    status: p.text().$type<WebhookDeliveryStatus>(),
    attempts: p.integer(),
    responseStatus: p.integer().nullable(),
    durationMs: p.integer().nullable(),
    error: p.text().nullable(),
    attemptLog: p.json<DeliveryAttempt[]>(),
    redeliveryOf: p.uuid().nullable(),
    createdAt: p.datetime(),
    completedAt: p.datetime().nullable(),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDeliverySchema>;
