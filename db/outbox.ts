import { context, propagation } from '@opentelemetry/api';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OrchestrationMessage } from '../domain/orchestration';
import type { SqlFragment } from './sql';
import { numberedPlaceholders, preparedStatement, runPrepared } from './preparedStatements';

/** The channel the relay LISTENs on; NOTIFY is transactional, so it fires only on commit. */
export const OUTBOX_CHANNEL = 'flightdeck_outbox';
/**
 * The payload of a notification for the relay's webhook lane alone (Migration0033's trigger sends it
 * too): every other notification leaves that lane asleep, so claims and wakes cost it nothing.
 */
export const OUTBOX_WEBHOOKS_WAKE = 'webhooks';

/**
 * The active trace context as propagation headers (W3C `traceparent`, `tracestate`), JSON for the
 * outbox's `trace_context`: the relay makes its Temporal call in that context, so the workflow
 * joins the trace of the request that asked for it. NULL when tracing is off or no span is active.
 */
export function outboxTraceContext(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? JSON.stringify(carrier) : null;
}

/**
 * The insert of outbox rows, as part of a statement that also sends `outboxNotifications`.
 * Timestamps come from the database clock, the one the relay compares them with. A release start's
 * fairness key is its deployment: the relay takes starts in fair shares by it.
 */
export function outboxInsert(messages: readonly OrchestrationMessage[]): SqlFragment {
  return {
    sql: outboxInsertSql('?', 'jsonb_array_elements(?::jsonb) AS message'),
    params: [outboxTraceContext(), JSON.stringify(messages)],
  };
}

/**
 * The insert of the messages a query of the same statement yields, one jsonb `message` per row
 * shaped as an `OrchestrationMessage`, for a statement that decides set-based which messages there
 * are (a claim's lease start) and so stays one statement; `traceContext` is the SQL of the
 * `outboxTraceContext()` value. It answers nothing: add a `RETURNING` to count the rows.
 */
export function outboxInsertFrom(messagesQuery: string, traceContext: string): string {
  return outboxInsertSql(traceContext, `(${messagesQuery}) AS messages(message)`);
}

function outboxInsertSql(traceContext: string, source: string): string {
  return `INSERT INTO outbox (kind, payload, trace_context, fairness_key)
       SELECT message->>'kind', message, ${traceContext}::jsonb,
              CASE WHEN message->>'kind' = 'release.start' THEN message->'release'->>'deploymentId' END
         FROM ${source}`;
}

/** The relay's wake-ups for these rows, as select-list items (NOTIFY fires only on commit). */
export function outboxNotifications(messages: readonly OrchestrationMessage[]): SqlFragment {
  return {
    sql: `CASE WHEN ? THEN pg_notify('${OUTBOX_CHANNEL}', '') END,
          CASE WHEN ? THEN pg_notify('${OUTBOX_CHANNEL}', '${OUTBOX_WEBHOOKS_WAKE}') END`,
    params: [messages.length > 0, messages.some((m) => m.kind === 'webhook.deliver')],
  };
}

/** The insert of messages and the relay's wake-up, alone: prepared (db/preparedStatements.ts). */
const ENQUEUE_ORCHESTRATIONS = preparedStatement(
  'enqueue_orchestrations',
  numberedPlaceholders(`WITH queued AS (${outboxInsert([]).sql}) SELECT ${outboxNotifications([]).sql}`),
);

/**
 * Records Temporal calls to be made once the surrounding transaction commits (see
 * worker/outboxRelay.ts). Must run inside `em.transactional`, with the writes the messages are
 * about.
 */
export async function enqueueOrchestrations(
  em: EntityManager,
  messages: readonly OrchestrationMessage[],
): Promise<void> {
  if (messages.length === 0) return;
  await runPrepared(em, ENQUEUE_ORCHESTRATIONS, [
    ...outboxInsert(messages).params,
    ...outboxNotifications(messages).params,
  ]);
}

export function enqueueOrchestration(em: EntityManager, message: OrchestrationMessage): Promise<void> {
  return enqueueOrchestrations(em, [message]);
}

/**
 * A workspace's target rollout woken after this transaction commits (`targets.added`), joining a
 * wake-up already waiting rather than adding one: a sync of 1,000 resources wrote 1,000 such rows,
 * and a version's rollout, asked for behind them, waited over a second for the relay to get through
 * them (bench/fanout.ts, the sync-then-ship sequence). A waiting row is joined only while no relay
 * holds it (`FOR SHARE SKIP LOCKED`): the relay takes it after this transaction commits, so its
 * wake-up comes after these targets exist; a row a relay has already taken, or one backing off after
 * a failed call, is not joined, and this write adds its own.
 */
const ENQUEUE_TARGETS_ADDED = preparedStatement(
  'enqueue_targets_added',
  `WITH waiting AS (
     SELECT id FROM outbox
      WHERE kind = 'targets.added' AND payload->>'workspaceId' = $1 AND available_at <= now()
      LIMIT 1 FOR SHARE SKIP LOCKED),
   queued AS (
     INSERT INTO outbox (kind, payload, trace_context)
     SELECT 'targets.added', jsonb_build_object('kind', 'targets.added', 'workspaceId', $1::text), $2::jsonb
      WHERE NOT EXISTS (SELECT FROM waiting)
     RETURNING id)
   SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM queued`,
);

export async function enqueueTargetsAdded(em: EntityManager, workspaceId: string): Promise<void> {
  await runPrepared(em, ENQUEUE_TARGETS_ADDED, [workspaceId, outboxTraceContext()]);
}

/**
 * The relay's lane of an outbox row (worker/outboxRelay.ts): 1 release starts, 2 leases, 3 webhook
 * deliveries, 4 target rollouts' wake-ups, 0 the rest. Index `outbox_relay_lanes_idx` is on this expression: change both together.
 */
export const OUTBOX_LANE_SQL =
  "CASE WHEN kind = 'release.start' THEN 1 WHEN kind IN ('lease.start', 'lease.end') THEN 2 WHEN kind = 'webhook.deliver' THEN 3 WHEN kind = 'targets.added' THEN 4 ELSE 0 END";
