import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Webhook deliveries a workspace may start per minute (deliveries and redeliveries together), unless
 * FLIGHTDECK_WEBHOOK_DELIVERIES_PER_MINUTE says otherwise. A fan-out of thousands of releases to a
 * workspace with many webhooks writes thousands of deliveries at once; past this many in a minute they
 * wait their turn in the outbox (docs/behaviour.md "Webhooks").
 */
export const DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE = 600;

/**
 * Admission is counted over a sliding minute: `webhook_admission` keeps one row per delivery started
 * (Migration0039WebhookAdmissions), and a workspace may start another while fewer than its cap were
 * started in the minute before. Rows older than the minute count for nothing and are purged as new ones come.
 */
const IN_THE_LAST_MINUTE = `admitted_at > now() - interval '1 minute'`;

/**
 * The relays' webhook lane admits under this transaction-level advisory lock, taken with
 * `pg_try_advisory_xact_lock` (any number from a 64-bit space, the same in every process): one relay
 * at a time, so two relays never both admit a workspace's last deliveries of the minute.
 */
export const WEBHOOK_ADMISSION_LOCK = 7_311_202_612;

/**
 * The next webhook deliveries to start (outbox rows, locked), `$1` a workspace's cap per minute and
 * `$2` the batch. Workspaces take turns (each one's oldest, then each one's second, …), each up to
 * what its minute has room for and its share of the batch: a workspace over its cap has its deliveries
 * wait in the outbox, never dropped, and never holds another workspace's behind them. The workspaces
 * with deliveries waiting are found one index probe each (`outbox_webhook_deliveries_idx`), as the
 * release starts' deployments are (worker/outboxRelay.ts).
 */
export const ADMITTED_DELIVERIES_SQL = `WITH RECURSIVE waiting AS (
       (SELECT payload->>'workspaceId' AS key FROM outbox WHERE kind = 'webhook.deliver'
         ORDER BY payload->>'workspaceId' LIMIT 1)
       UNION ALL
       SELECT (SELECT o.payload->>'workspaceId' FROM outbox o
                WHERE o.kind = 'webhook.deliver' AND o.payload->>'workspaceId' > w.key
                ORDER BY o.payload->>'workspaceId' LIMIT 1)
         FROM waiting w WHERE w.key IS NOT NULL),
     workspaces AS (SELECT key FROM waiting WHERE key IS NOT NULL),
     share AS (SELECT ceil($2::numeric / greatest(count(*), 1))::int AS n FROM workspaces),
     room AS (
       SELECT w.key, least($1 - (SELECT count(*) FROM webhook_admission a
                                  WHERE a.workspace_id = w.key::uuid AND a.${IN_THE_LAST_MINUTE}),
                           (SELECT n FROM share)) AS n
         FROM workspaces w),
     fair AS (
       SELECT next.id FROM room r
        CROSS JOIN LATERAL (
          SELECT o.id, row_number() OVER (ORDER BY o.id) AS turn FROM outbox o
           WHERE o.kind = 'webhook.deliver' AND o.payload->>'workspaceId' = r.key AND o.available_at <= now()
           ORDER BY o.id
           LIMIT greatest(r.n, 0)) next
        ORDER BY next.turn, next.id
        LIMIT $2)
   SELECT o.id, o.payload, o.attempts, o.trace_context FROM outbox o JOIN fair USING (id)
    ORDER BY o.id
      FOR UPDATE OF o SKIP LOCKED`;

/**
 * Counts started deliveries, `$1` their workspaces (one entry per delivery), and forgets those past
 * the minute. Stamped after their starts, so a delivery never counts for less of the minute than it ran.
 */
export const RECORD_ADMISSIONS_SQL = `WITH forgotten AS (
       DELETE FROM webhook_admission WHERE NOT (${IN_THE_LAST_MINUTE}))
     INSERT INTO webhook_admission (workspace_id, admitted_at) SELECT unnest($1::uuid[]), clock_timestamp()`;

/**
 * Seconds until a redelivery asked of the workspace now could start without waiting, or undefined
 * when it could start at once: the deliveries started in the last minute and those already waiting
 * go first, and it goes when the minute has room for all of them and it. With a minute's worth or
 * more waiting, a minute is as close as it is told (the count of waiting ones stops at the cap).
 */
export async function redeliveryWaitSeconds(
  em: EntityManager,
  workspaceId: string,
  perMinute: number,
): Promise<number | undefined> {
  const [row] = await em.execute<{ queued: number; freedIn: number | null }[]>(
    `WITH admitted AS (
            SELECT admitted_at, row_number() OVER (ORDER BY admitted_at) AS turn FROM webhook_admission
             WHERE workspace_id = ? AND ${IN_THE_LAST_MINUTE}),
          waiting AS (
            SELECT count(*)::int AS n FROM (
              SELECT FROM outbox WHERE kind = 'webhook.deliver' AND payload->>'workspaceId' = ? LIMIT ?) w)
     SELECT (SELECT count(*) FROM admitted)::int + waiting.n AS queued,
            (SELECT ceil(extract(epoch FROM a.admitted_at + interval '1 minute' - now()))::int
               FROM admitted a WHERE a.turn = (SELECT count(*) FROM admitted) + waiting.n + 1 - ?) AS "freedIn"
       FROM waiting`,
    [workspaceId, workspaceId, perMinute, perMinute],
  );
  if (!row || row.queued < perMinute) return undefined;
  return Math.max(1, row.freedIn ?? 60);
}
