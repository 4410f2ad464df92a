import type { EntityManager } from '@mikro-orm/postgresql';
import type { WebhookEvent } from '../domain/audit';
import { ConflictError, NotFoundError, RateLimitedError } from '../domain/errors';
import type { Page } from '../domain/pagination';
import { WebhookDeliverySchema, WebhookSchema, type Webhook, type WebhookDelivery } from '../db/entities';
import { newId } from '../db/ids';
import { enqueueOrchestration } from '../db/outbox';
import type { SecretBox } from '../db/secrets';
import { redeliveryWaitSeconds } from '../db/webhookAdmissions';
import { findOwned, listPage } from './common';

/** Webhooks a workspace may have: every event is matched against each of them. */
export const MAX_WEBHOOKS_PER_WORKSPACE = 100;

export interface WebhookInput {
  url: string;
  events: WebhookEvent[];
  secret: string;
  description?: string | null;
}

/**
 * Webhooks (docs/behaviour.md "Webhooks"): the secret is sealed to the webhook and never answered.
 * Deliveries are written with the events they carry (Migration0033's trigger); a redelivery is a
 * new delivery of the same event, with the same body and event id, and counts toward the workspace's
 * deliveries per minute (db/webhookAdmissions.ts) as they do.
 */
export class WebhookStore {
  constructor(
    private readonly em: EntityManager,
    private readonly box: SecretBox,
    /** Deliveries the workspace may start per minute. */
    private readonly deliveriesPerMinute: number,
  ) {}

  create(workspaceId: string, input: WebhookInput): Promise<Webhook> {
    return this.em.transactional(async (em) => {
      const count = await em.count(WebhookSchema, { workspaceId });
      if (count >= MAX_WEBHOOKS_PER_WORKSPACE)
        throw new ConflictError(
          `The workspace has ${count} webhooks, the most it may have; delete one first`,
          'too_many_webhooks',
        );
      const id = newId();
      const webhook = em.create(WebhookSchema, {
        id,
        workspaceId,
        url: input.url,
        events: input.events,
        secret: this.box.forRecord(workspaceId, 'webhook', id).seal(input.secret),
        description: input.description ?? null,
      });
      await em.flush();
      return webhook;
    });
  }

  list(workspaceId: string, page: { limit: number; offset: number }): Promise<Page<Webhook>> {
    return listPage(this.em, WebhookSchema, { workspaceId }, page);
  }

  get(workspaceId: string, webhookId: string): Promise<Webhook> {
    return findOwned(this.em, WebhookSchema, workspaceId, webhookId, 'webhook');
  }

  /** Replaces the webhook's settings; the secret only when one is sent. */
  async update(workspaceId: string, webhookId: string, input: Partial<WebhookInput>): Promise<Webhook> {
    const webhook = await this.get(workspaceId, webhookId);
    if (input.url !== undefined) webhook.url = input.url;
    if (input.events !== undefined) webhook.events = input.events;
    if (input.description !== undefined) webhook.description = input.description ?? null;
    if (input.secret !== undefined)
      webhook.secret = this.box.forRecord(workspaceId, 'webhook', webhookId).seal(input.secret);
    await this.em.flush();
    return webhook;
  }

  /** Deleted with its deliveries; a delivery in flight finds it gone and stops. */
  async delete(workspaceId: string, webhookId: string): Promise<Webhook> {
    const webhook = await this.get(workspaceId, webhookId);
    await this.em.removeAndFlush(webhook);
    return webhook;
  }

  async deliveries(
    workspaceId: string,
    webhookId: string,
    page: { limit: number; offset: number },
  ): Promise<Page<WebhookDelivery>> {
    await this.get(workspaceId, webhookId);
    const [items, total] = await this.em.findAndCount(
      WebhookDeliverySchema,
      { webhookId },
      { orderBy: { id: 'desc' }, limit: page.limit, offset: page.offset },
    );
    return { items, total, limit: page.limit, offset: page.offset };
  }

  /**
   * The same event sent again, as a new delivery. Refused (429) while the workspace's deliveries of
   * the last minute and those waiting their turn already fill its minute: automatic deliveries wait
   * then, but a person asking again is told when to.
   */
  redeliver(workspaceId: string, webhookId: string, deliveryId: string): Promise<WebhookDelivery> {
    return this.em.transactional(async (em) => {
      await findOwned(em, WebhookSchema, workspaceId, webhookId, 'webhook');
      const original = await em.findOne(WebhookDeliverySchema, { id: deliveryId, webhookId });
      if (!original) throw new NotFoundError('webhook delivery', deliveryId);
      const wait = await redeliveryWaitSeconds(em, workspaceId, this.deliveriesPerMinute);
      if (wait !== undefined)
        throw new RateLimitedError(
          `The workspace has started or queued ${this.deliveriesPerMinute} webhook deliveries in the last minute, ` +
            `the most it may; ask again in ${wait} s`,
          wait,
        );
      const [row] = await em.execute<{ id: string }[]>(
        `INSERT INTO webhook_delivery (webhook_id, workspace_id, event_id, event_type, payload, redelivery_of)
         SELECT webhook_id, workspace_id, event_id, event_type, payload, id FROM webhook_delivery WHERE id = ?
         RETURNING id`,
        [deliveryId],
      );
      await enqueueOrchestration(em, { kind: 'webhook.deliver', workspaceId, deliveryId: row!.id });
      return em.findOneOrFail(WebhookDeliverySchema, { id: row!.id });
    });
  }
}
