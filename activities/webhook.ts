import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { SIGNATURE_HEADER, webhookSignature } from '../domain/webhookSignature';
import { abandonDelivery, deliveryToSend, recordDeliveryAttempt } from '../engine/executor/webhookDeliveries';
import { describeEgressFailure, EgressRefusedError, type Egress } from './egress';

const REQUEST_TIMEOUT_MS = 10_000;
const ANSWER_LIMIT = 64 * 1024;

/**
 * The webhook delivery workflow's steps (docs/behaviour.md "Webhooks"): one POST per attempt,
 * through the egress policy, logged; anything but a 2xx answer is thrown so Temporal retries it
 * with backoff. A refusal by the egress policy is final: the address will not change by retrying.
 */
export function createWebhookActivities({
  orm,
  secrets,
  egress,
}: {
  orm: Database;
  secrets: SecretBox;
  egress: Egress;
}) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    async deliverWebhook(deliveryId: string): Promise<void> {
      const delivery = await deliveryToSend(fork(), deliveryId);
      if (!delivery) return;
      const secret = secrets
        .forRecord(delivery.workspaceId, 'webhook', delivery.webhookId)
        .open(delivery.sealedSecret);
      const started = Date.now();
      const at = new Date(started).toISOString();
      let response;
      try {
        response = await egress.request(delivery.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Flightdeck-Webhook',
            'x-flightdeck-event': delivery.eventType,
            'x-flightdeck-event-id': delivery.eventId,
            'x-flightdeck-delivery': delivery.id,
            [SIGNATURE_HEADER.toLowerCase()]: webhookSignature(secret, delivery.body),
          },
          body: delivery.body,
          timeoutMs: REQUEST_TIMEOUT_MS,
          maxBytes: ANSWER_LIMIT,
        });
      } catch (error) {
        const refused = error instanceof EgressRefusedError;
        const message = refused
          ? `refused by the egress policy: ${error.message}`
          : `the request failed: ${describeEgressFailure(error)}`;
        const attempt = { at, responseStatus: null, durationMs: Date.now() - started, error: message };
        await recordDeliveryAttempt(fork(), deliveryId, attempt, refused ? 'failed' : 'pending');
        if (refused) return;
        throw new Error(message);
      }
      const error = response.ok ? null : `the receiver answered ${response.status}`;
      const attempt = { at, responseStatus: response.status, durationMs: Date.now() - started, error };
      await recordDeliveryAttempt(fork(), deliveryId, attempt, response.ok ? 'delivered' : 'pending');
      if (error) throw new Error(error);
    },
    /** Its retries ran out: the delivery is failed with the last error. */
    async abandonWebhookDelivery(deliveryId: string, error: string): Promise<void> {
      await abandonDelivery(fork(), deliveryId, error);
    },
  };
}
