import { ActivityFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { WEBHOOK_ATTEMPT_TIMEOUT_MS, WEBHOOK_RETRY } from '../domain/webhookAttempts';

/**
 * Each attempt is an activity of its own, retried by Temporal with backoff (1 s, growing by half
 * each time, at most 10 minutes apart) for two hours: a receiver down for a while gets the event
 * when it is back (docs/behaviour.md "Webhooks"). Temporal times an attempt out just after its
 * request's own timeout (domain/webhookAttempts.ts).
 */
const send = proxyActivities<Activities>({
  startToCloseTimeout: WEBHOOK_ATTEMPT_TIMEOUT_MS,
  scheduleToCloseTimeout: WEBHOOK_RETRY.totalMs,
  retry: {
    initialInterval: WEBHOOK_RETRY.initialIntervalMs,
    backoffCoefficient: WEBHOOK_RETRY.backoffCoefficient,
    maximumInterval: WEBHOOK_RETRY.maximumIntervalMs,
  },
});

const steps = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

export interface WebhookDeliveryInput {
  deliveryId: string;
}

/** `webhook-delivery/<deliveryId>`: one event sent to one webhook, at least once, or failed in the log. */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<void> {
  try {
    await send.deliverWebhook(input.deliveryId);
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    const message = cause instanceof Error ? cause.message : String(cause);
    await steps.abandonWebhookDelivery(input.deliveryId, `gave up after two hours: ${message}`);
  }
}
