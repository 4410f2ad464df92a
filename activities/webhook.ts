import type { EntityManager } from '@mikro-orm/postgresql';
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { WEBHOOK_REQUEST_TIMEOUT_MS, webhookRetryDelayAfterNoAnswerMs } from '../domain/webhookAttempts';
import { SIGNATURE_HEADER, webhookSignature } from '../domain/webhookSignature';
import { abandonDelivery, deliveryToSend, recordDeliveryAttempt } from '../engine/executor';
import { EgressRefusedError, type Egress } from './egress';

const ANSWER_LIMIT = 64 * 1024;

/**
 * What the delivery log says of a request that got no answer, and nothing more: no address, no
 * system error, no duration. A tenant's webhook URL is theirs to choose, so anything finer (a refused
 * connection against a timeout, the time either took) would map the network behind the worker.
 */
const REFUSED_BY_POLICY = 'refused by policy';
const NO_ANSWER = 'failed';

/**
 * The webhook delivery workflow's steps (docs/behaviour.md "Webhooks"): one POST per attempt,
 * through the webhooks' own egress policy (never the agents'), logged; anything but a 2xx answer is
 * thrown so Temporal retries it with backoff. A refusal by the egress policy is final: the address
 * will not change by retrying.
 */
export function createWebhookActivities({
  orm,
  secrets,
  egress,
}: {
  orm: Database;
  secrets: SecretBox;
  /** The webhooks' egress policy (FLIGHTDECK_WEBHOOK_EGRESS_ALLOW). */
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
          timeoutMs: WEBHOOK_REQUEST_TIMEOUT_MS,
          maxBytes: ANSWER_LIMIT,
        });
      } catch (error) {
        const refused = error instanceof EgressRefusedError;
        const message = refused ? REFUSED_BY_POLICY : NO_ANSWER;
        const attempt = { at, responseStatus: null, durationMs: null, error: message };
        await recordDeliveryAttempt(fork(), deliveryId, attempt, refused ? 'failed' : 'pending');
        if (refused) return;
        throw ApplicationFailure.create({
          message,
          nextRetryDelay: webhookRetryDelayAfterNoAnswerMs(activityInfo().attempt, started, Date.now()),
        });
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
