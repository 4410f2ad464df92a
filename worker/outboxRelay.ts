import { setTimeout as sleep } from 'node:timers/promises';
import { context, propagation, ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { Pool, type PoolClient } from 'pg';
import type { Logger } from 'pino';
import { OUTBOX_CHANNEL, OUTBOX_LANE_SQL, OUTBOX_WEBHOOKS_WAKE } from '../db/outbox';
import { ChannelListener } from '../db/channelListener';
import {
  ADMITTED_DELIVERIES_SQL,
  DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE,
  RECORD_ADMISSIONS_SQL,
  WEBHOOK_ADMISSION_LOCK,
} from '../db/webhookAdmissions';
import type { OrchestrationMessage } from '../domain/orchestration';
import { coalescingKey, leaseKey, settledLeases, type Dispatch } from './orchestrationDispatch';

export interface OutboxRelayOptions {
  databaseUrl: string;
  dispatch: Dispatch;
  logger: Logger;
  batchSize?: number;
  /** Calls in flight per lane. */
  concurrency?: number;
  /** Safety net for a lost notification; normally NOTIFY wakes the relay at commit. */
  pollIntervalMs?: number;
  /** Webhook deliveries a workspace may start per minute (db/webhookAdmissions.ts). */
  webhookDeliveriesPerMinute?: number;
}

/**
 * The relay serves five lanes, each its own loop over its own rows: the workflow starts of new
 * releases (thousands per version, written by the fan-out), leases (a burst of claims is a burst of
 * lease workflows, which trail their claims), webhook deliveries (a webhook on `release.created`
 * gets one per release of a fan-out), the wake-ups of target rollouts (an inventory sync's, each a
 * signal to a workflow busy with the sync's targets, slow on a busy server) and every other message
 * (version rollouts, wakes: each a person or an agent waiting). A fan-out's backlog of starts or
 * deliveries, a burst of claims or a sync thus never delays a wake or the next version's rollout: a
 * version asked for right after a sync of 1,000 resources waited 1.3 s behind its target wake-ups
 * (bench/fanout.ts, the sync-then-ship sequence). Starts are taken a few at a time (twice the calls in
 * flight), so the relays of several workers share a fan-out: each start hands the new workflow's
 * first task to the worker of the relay that made it. Webhook deliveries are admitted by workspace,
 * each up to its cap per minute (`paced`, db/webhookAdmissions.ts). `lane` is the value of
 * OUTBOX_LANE_SQL.
 */
const LANES = [
  { name: 'starts', lane: 1, few: true },
  { name: 'leases', lane: 2, few: false },
  { name: 'messages', lane: 0, few: false },
  { name: 'target wakes', lane: 4, few: false },
  // Woken only by its own notification (OUTBOX_WEBHOOKS_WAKE): a claim's or a wake's leaves it asleep.
  { name: 'webhooks', lane: 3, few: false, paced: true, wokenBy: OUTBOX_WEBHOOKS_WAKE },
] as const;

type Lane = (typeof LANES)[number];

interface OutboxRow {
  id: string;
  payload: OrchestrationMessage;
  attempts: number;
  /** Propagation headers of the writer's span (db/outbox.ts), or null. */
  trace_context: Record<string, string> | null;
}

/** The trace the row was written in: its call and log lines continue it (a no-op with tracing off). */
function traceOf(row: OutboxRow): Context {
  return row.trace_context ? propagation.extract(ROOT_CONTEXT, row.trace_context) : ROOT_CONTEXT;
}

const MAX_BACKOFF_SECONDS = 300;

/** A lane's next rows, oldest first. */
const LANE_SQL = `SELECT id, payload, attempts, trace_context FROM outbox
   WHERE (${OUTBOX_LANE_SQL}) = $1 AND available_at <= now()
   ORDER BY id
   LIMIT $2
   FOR UPDATE SKIP LOCKED`;

/**
 * The next release starts in fair shares by deployment (`fairness_key`): each deployment's oldest
 * start first, then each one's second, and so on, so a fan-out of a hundred thousand releases never
 * holds another deployment's starts behind it. Read through index `outbox_fair_starts_idx` alone:
 * the deployments with starts waiting are found one index probe each (`waiting`), and each gives its
 * oldest few, one when there are more deployments than the batch takes (only first turns are taken
 * then). Ranking every waiting start instead cost a full read of the outbox per batch, 165 ms with
 * 100,000 waiting, while the fan-out that wrote them needed the database.
 */
const FAIR_STARTS_SQL = `WITH RECURSIVE waiting AS (
       (SELECT fairness_key AS key FROM outbox WHERE kind = 'release.start' ORDER BY fairness_key LIMIT 1)
       UNION ALL
       SELECT (SELECT o.fairness_key FROM outbox o
                WHERE o.kind = 'release.start' AND o.fairness_key > w.key ORDER BY o.fairness_key LIMIT 1)
         FROM waiting w WHERE w.key IS NOT NULL),
     fair AS (
       SELECT next.id FROM waiting w
        CROSS JOIN LATERAL (
          SELECT o.id, row_number() OVER (ORDER BY o.id) AS turn FROM outbox o
           WHERE o.kind = 'release.start' AND o.fairness_key = w.key AND o.available_at <= now()
           ORDER BY o.id
           LIMIT CASE WHEN (SELECT count(key) FROM waiting) > $1 THEN 1 ELSE $1 END) next
        ORDER BY next.turn, next.id
        LIMIT $1)
   SELECT o.id, o.payload, o.attempts, o.trace_context FROM outbox o JOIN fair USING (id)
    ORDER BY o.id
      FOR UPDATE OF o SKIP LOCKED`;

/**
 * While a version's fan-out writes its batches, or a version's rollout was asked for and has not
 * written its first batch (up to 30 s), release starts trail at this pace (starts per batch, and a
 * pause after it): the fan-out's SQL and its rollout's first workflow task then have the CPU, and its
 * jobs are queued sooner. After an inventory sync, the synced targets' releases starting at full
 * pace held a version's first workflow task 1.4 s (bench/fanout.ts, the sync-then-ship sequence).
 */
const STARTS_DURING_FANOUT = 8;
const PAUSE_DURING_FANOUT_MS = 1_000;

/**
 * Performs the Temporal calls that committed transactions recorded in the outbox. Any number of
 * relays may run (one per worker process): `FOR UPDATE SKIP LOCKED` gives each row to one relay
 * at a time, and a relay that dies mid-batch leaves its rows to the next one. A failed call is
 * retried with backoff; a message is deleted only after its call succeeded.
 */
export class OutboxRelay {
  private readonly pool: Pool;
  private readonly listener: ChannelListener;
  private running = false;
  private readonly wakes = new Map<Lane['name'], () => void>();
  private loops: Promise<void>[] = [];
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly pollIntervalMs: number;
  private readonly webhookDeliveriesPerMinute: number;
  /** Whether a fan-out was writing batches when the starts lane last looked. */
  private fanoutBusy = false;

  constructor(private readonly options: OutboxRelayOptions) {
    this.pool = new Pool({ connectionString: options.databaseUrl, max: LANES.length });
    this.pool.on('error', (error) => options.logger.warn({ err: error }, 'outbox relay pool error'));
    this.batchSize = options.batchSize ?? 500;
    this.concurrency = options.concurrency ?? 32;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.webhookDeliveriesPerMinute =
      options.webhookDeliveriesPerMinute ?? DEFAULT_WEBHOOK_DELIVERIES_PER_MINUTE;
    this.listener = new ChannelListener({
      databaseUrl: options.databaseUrl,
      channel: OUTBOX_CHANNEL,
      logger: options.logger,
      onNotification: (payload) => this.wakeFor(payload),
    });
  }

  async start(): Promise<void> {
    this.running = true;
    // Until it is heard (and whenever it is lost), the lanes poll.
    await this.listener.start();
    this.loops = LANES.map((lane) => this.run(lane));
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeAll();
    await Promise.all(this.loops);
    await this.listener.stop();
    await this.pool.end();
  }

  private batchSizeOf(lane: Lane): number {
    return lane.few ? this.concurrency * 2 : this.batchSize;
  }

  /** The starts to take now: fewer while a fan-out writes its batches (`rollout_batch_at`). */
  private async startsBatchSize(client: PoolClient): Promise<number> {
    const { rows } = await client.query<{ busy: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM deployment_version WHERE rollout_batch_at > now() - interval '3 seconds')
           OR EXISTS (SELECT 1 FROM deployment_version
                       WHERE rollout_status = 'pending' AND updated_at > now() - interval '30 seconds') AS busy`,
    );
    this.fanoutBusy = rows[0]?.busy === true;
    return this.fanoutBusy ? STARTS_DURING_FANOUT : this.concurrency * 2;
  }

  /** A lane's next rows, locked for this batch's transaction. */
  private async nextRows(client: PoolClient, lane: Lane): Promise<OutboxRow[]> {
    if (lane.few)
      return (await client.query<OutboxRow>(FAIR_STARTS_SQL, [await this.startsBatchSize(client)])).rows;
    if ('paced' in lane) {
      // Another relay is admitting deliveries: this one leaves them to it until its next look.
      const { rows } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS held', [
        WEBHOOK_ADMISSION_LOCK,
      ]);
      if (!rows[0]?.held) return [];
      return (
        await client.query<OutboxRow>(ADMITTED_DELIVERIES_SQL, [
          this.webhookDeliveriesPerMinute,
          this.batchSize,
        ])
      ).rows;
    }
    return (await client.query<OutboxRow>(LANE_SQL, [lane.lane, this.batchSizeOf(lane)])).rows;
  }

  private wakeAll(): void {
    for (const wake of this.wakes.values()) wake();
  }

  /** The lanes a notification is for: the one whose own it is, else every lane without one of its own. */
  private wakeFor(payload: string): void {
    for (const lane of LANES) {
      const own = 'wokenBy' in lane ? lane.wokenBy : undefined;
      if (own === undefined ? payload === OUTBOX_WEBHOOKS_WAKE : payload !== own) continue;
      this.wakes.get(lane.name)?.();
    }
  }

  private async run(lane: Lane): Promise<void> {
    while (this.running) {
      let handled = 0;
      try {
        handled = await this.drainBatch(lane);
      } catch (error) {
        this.options.logger.error({ err: error, lane: lane.name }, 'outbox relay batch failed');
      }
      if (lane.few && this.fanoutBusy && handled > 0) {
        await sleep(PAUSE_DURING_FANOUT_MS);
        continue;
      }
      if (handled === this.batchSizeOf(lane)) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollIntervalMs);
        this.wakes.set(lane.name, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.wakes.delete(lane.name);
    }
  }

  /** One batch of a lane (both lanes by default) in one transaction; returns how many rows it took. */
  async drainBatch(lane?: Lane): Promise<number> {
    if (!lane) {
      let handled = 0;
      for (const each of LANES) handled += await this.drainBatch(each);
      return handled;
    }
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const rows = await this.nextRows(client, lane);
      // A lease that started and ended within the batch needs no workflow: both rows are done.
      const settled = new Set<string | undefined>(settledLeases(rows.map((row) => row.payload)));
      const calls = new Map<string, OutboxRow[]>();
      for (const row of rows) {
        if (settled.has(leaseKey(row.payload))) continue;
        // Rows that say the same thing share one call and its outcome.
        const key = coalescingKey(row.payload) ?? row.id;
        calls.set(key, [...(calls.get(key) ?? []), row]);
      }
      const pending = [...calls.values()];
      const failures = new Map<string, string>();
      let next = 0;
      const workers = Array.from({ length: Math.min(this.concurrency, pending.length) }, async () => {
        while (next < pending.length) {
          const same = pending[next++]!;
          try {
            await context.with(traceOf(same[0]!), () => this.options.dispatch(same[0]!.payload));
          } catch (error) {
            for (const row of same) failures.set(row.id, (error as Error).message ?? String(error));
          }
        }
      });
      await Promise.all(workers);
      const succeeded = rows.filter((row) => !failures.has(row.id));
      const done = succeeded.map((row) => row.id);
      if (done.length > 0) await client.query('DELETE FROM outbox WHERE id = ANY($1::bigint[])', [done]);
      if ('paced' in lane && done.length > 0) {
        await client.query(RECORD_ADMISSIONS_SQL, [
          succeeded.flatMap(({ payload }) =>
            payload.kind === 'webhook.deliver' ? [payload.workspaceId] : [],
          ),
        ]);
      }
      for (const row of rows.filter((r) => failures.has(r.id))) {
        const backoff = Math.min(MAX_BACKOFF_SECONDS, 2 ** Math.min(row.attempts, 10));
        await client.query(
          `UPDATE outbox SET attempts = attempts + 1, last_error = $2,
                  available_at = now() + make_interval(secs => $3)
            WHERE id = $1`,
          [row.id, failures.get(row.id)!.slice(0, 2000), backoff],
        );
        context.with(traceOf(row), () =>
          this.options.logger.warn(
            {
              outboxId: row.id,
              kind: row.payload.kind,
              attempts: row.attempts + 1,
              error: failures.get(row.id),
            },
            'orchestration call failed; will retry',
          ),
        );
      }
      await client.query('COMMIT');
      return rows.length;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}
