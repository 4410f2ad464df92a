import type { EntityManager } from '@mikro-orm/postgresql';
import type { DeliveryAttempt, WebhookDeliveryStatus } from '../../db/entities';

/** A pending delivery as its workflow sends it: the body exactly as signed, and where to. */
export interface DeliveryToSend {
  id: string;
  workspaceId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  url: string;
  sealedSecret: string;
  body: string;
}

/** Attempts the delivery log keeps per delivery (the count of all is kept beside them). */
const LOGGED_ATTEMPTS = 20;

/** The delivery, if it is still pending and its webhook still exists. */
export async function deliveryToSend(em: EntityManager, deliveryId: string): Promise<DeliveryToSend | null> {
  const [row] = await em.execute<DeliveryToSend[]>(
    `SELECT d.id, d.workspace_id AS "workspaceId", d.webhook_id AS "webhookId", d.event_id AS "eventId",
            d.event_type AS "eventType", w.url, w.secret AS "sealedSecret", d.payload::text AS body
       FROM webhook_delivery d JOIN webhook w ON w.id = d.webhook_id
      WHERE d.id = ? AND d.status = 'pending'`,
    [deliveryId],
  );
  return row ?? null;
}

/** One attempt in the log; `status` ends the delivery (delivered, failed) or keeps it pending. */
export async function recordDeliveryAttempt(
  em: EntityManager,
  deliveryId: string,
  attempt: DeliveryAttempt,
  status: WebhookDeliveryStatus,
): Promise<void> {
  await em.execute(
    `UPDATE webhook_delivery
        SET attempts = attempts + 1, response_status = ?, duration_ms = ?, error = ?, status = ?,
            completed_at = CASE WHEN ? = 'pending' THEN NULL ELSE now() END,
            attempt_log = (SELECT coalesce(jsonb_agg(a ORDER BY n), '[]')
                             FROM (SELECT a, n FROM jsonb_array_elements(attempt_log || jsonb_build_array(?::jsonb))
                                                     WITH ORDINALITY AS logged(a, n)
                                    ORDER BY n DESC LIMIT ${LOGGED_ATTEMPTS}) latest)
      WHERE id = ? AND status = 'pending'`,
    [
      attempt.responseStatus,
      attempt.durationMs,
      attempt.error,
      status,
      status,
      JSON.stringify(attempt),
      deliveryId,
    ],
  );
}

/** A delivery its workflow gave up on (its retries ran out): failed with the last error. */
export async function abandonDelivery(em: EntityManager, deliveryId: string, error: string): Promise<void> {
  await em.execute(
    `UPDATE webhook_delivery SET status = 'failed', error = ?, completed_at = now() WHERE id = ? AND status = 'pending'`,
    [error.slice(0, 1000), deliveryId],
  );
}
