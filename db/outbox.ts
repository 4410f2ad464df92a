import type { EntityManager } from '@mikro-orm/postgresql';
import type { OrchestrationMessage } from '../domain/orchestration';

/** The channel the relay LISTENs on; NOTIFY is transactional, so it fires only on commit. */
export const OUTBOX_CHANNEL = 'flightdeck_outbox';

/**
 * Records a Temporal call to be made once the surrounding transaction commits (see
 * worker/outboxRelay.ts). Must run inside `em.transactional`, with the writes the message is about.
 * Timestamps come from the database clock, the one the relay compares them with.
 */
export async function enqueueOrchestration(em: EntityManager, message: OrchestrationMessage): Promise<void> {
  await em.execute(
    `WITH queued AS (INSERT INTO outbox (kind, payload) VALUES (?, ?::jsonb))
     SELECT pg_notify('${OUTBOX_CHANNEL}', '')`,
    [message.kind, JSON.stringify(message)],
  );
}
