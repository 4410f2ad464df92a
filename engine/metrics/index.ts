import type { EntityManager } from '@mikro-orm/postgresql';
import { Counter, Gauge, Histogram, Registry, type Aggregator } from 'prom-client';
import type { Database } from '../../db/database';
import { ACTIVE_JOB_STATUS_LIST } from '../../db/sql';

/**
 * Flightdeck's domain metrics, beside the HTTP and process ones (api/middleware/metrics.ts).
 *
 * Events are counted where they happen, in this process: claims and heartbeats in the API, lease
 * expiries and version fan-outs in the worker (`flightdeck start` runs both in one process; a
 * worker run on its own counts its events in its own process). States — active jobs by status and
 * agent, queues, the outbox, active releases by phase, gate waits — are read from the database
 * (every API instance reports the same, whichever process changed them), at most once per a few
 * seconds however often /metrics is scraped; they count what has not ended (history would make
 * every read read every job ever run).
 *
 * Labels that tell workspaces apart (`TENANT_LABELS`) are always recorded; /metrics leaves them out
 * unless configured (api/metricsScrape.ts), summing (or, for ages, taking the largest of) what
 * they split.
 */

/** Labels naming a workspace or one of its records: shown on /metrics only when configured. */
export const TENANT_LABELS: readonly string[] = ['workspace', 'agent', 'deployment', 'environment'];

export const domainEvents = new Registry();

export const jobClaims = new Counter({
  name: 'flightdeck_job_claims_total',
  help: 'Jobs handed to pull agents by a claim (by workspace and agent, when tenant labels are shown)',
  labelNames: ['workspace', 'agent'],
  registers: [domainEvents],
});

export const jobHeartbeats = new Counter({
  name: 'flightdeck_job_heartbeats_total',
  help: 'Heartbeats that extended a lease',
  registers: [domainEvents],
});

export const leaseExpiries = new Counter({
  name: 'flightdeck_lease_expiries_total',
  help: 'Claims whose lease expired without a heartbeat; their jobs went back to the queue',
  registers: [domainEvents],
});

export const deliveryLimits = new Counter({
  name: 'flightdeck_job_delivery_limits_total',
  help: 'Jobs that ended failure because their leases expired as many times as their agent allows (maxDeliveries)',
  registers: [domainEvents],
});

export const leaseReaperLag = new Histogram({
  name: 'flightdeck_lease_reaper_lag_seconds',
  help: 'How long after its expiry a lease was reaped',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
  registers: [domainEvents],
});

export const versionFanout = new Histogram({
  name: 'flightdeck_version_fanout_seconds',
  help: 'From a version rollout’s first batch to its last: releases created for every target',
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [domainEvents],
});

interface Labelled {
  labels: Record<string, string>;
  value: number;
}

/** How long the database-backed gauges are reused between scrapes, by default. */
export const STATE_READ_INTERVAL_MS = 5000;

/**
 * `read`, shared: a call while a read is under way, or within `intervalMs` of the last read's
 * start, gets that read's result, so a burst of scrapes reads the database once. A failed read is
 * not kept.
 */
export function sharedRead<T>(
  intervalMs: number,
  read: () => Promise<T>,
  now: () => number = Date.now,
): () => Promise<T> {
  let last: { at: number; result: Promise<T>; settled: boolean } | undefined;
  return () => {
    const at = now();
    if (last && (!last.settled || at - last.at < intervalMs)) return last.result;
    const current = { at, result: read(), settled: false };
    last = current;
    current.result.then(
      () => (current.settled = true),
      () => {
        if (last === current) last = undefined;
      },
    );
    return current.result;
  };
}

const byLabels = async (em: EntityManager, sql: string, labelNames: string[]): Promise<Labelled[]> => {
  const rows = await em.execute<Record<string, unknown>[]>(sql);
  return rows.map((row) => ({
    labels: Object.fromEntries(labelNames.map((name) => [name, String(row[name] ?? '')])),
    value: Number(row.value),
  }));
};

interface StateGauge {
  name: string;
  help: string;
  labelNames: string[];
  /** How values split by a tenant label combine when it is left out (default: their sum). */
  aggregator?: Aggregator;
  read: (em: EntityManager) => Promise<Labelled[]>;
}

/** The DORA window of the gauges (the API's report takes any window). */
const DORA_GAUGE_DAYS = 30;
/** Series each DORA gauge keeps at most: the deployments and environments with the most releases. */
const DORA_GAUGE_SERIES = 1_000;

/**
 * DORA figures as gauges (docs/behaviour.md "DORA"), per workspace, deployment and environment over
 * the last 30 days: releases that succeeded and failed, and the median lead time of the successes.
 * Without tenant labels they combine: the counts are summed, the lead time is the slowest.
 */
function doraGauges(): StateGauge[] {
  const labels = ['workspace', 'deployment', 'environment'];
  const read = (value: string) => (em: EntityManager) =>
    byLabels(
      em,
      `SELECT r.workspace_id AS workspace, d.slug AS deployment, e.name AS environment, ${value} AS value
         FROM release r JOIN deployment d ON d.id = r.deployment_id JOIN environment e ON e.id = r.environment_id
         JOIN deployment_version v ON v.id = r.version_id
        WHERE r.completed_at >= now() - make_interval(days => ${DORA_GAUGE_DAYS}) AND r.phase IN ('succeeded', 'failed')
        GROUP BY 1, 2, 3
        ORDER BY count(*) DESC, 1, 2, 3
        LIMIT ${DORA_GAUGE_SERIES}`,
      labels,
    );
  return [
    {
      name: 'flightdeck_dora_deployments',
      help: 'Releases that succeeded in the last 30 days (DORA deployment frequency)',
      labelNames: labels,
      read: read(`count(*) FILTER (WHERE r.phase = 'succeeded')::int`),
    },
    {
      name: 'flightdeck_dora_failures',
      help: 'Releases that failed in the last 30 days (DORA change failures)',
      labelNames: labels,
      read: read(`count(*) FILTER (WHERE r.phase = 'failed')::int`),
    },
    {
      name: 'flightdeck_dora_lead_time_seconds',
      help: 'Median time from a version to its success on a target, last 30 days (DORA lead time for changes)',
      labelNames: labels,
      aggregator: 'max',
      read: read(
        `coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.completed_at - v.created_at))
           FILTER (WHERE r.phase = 'succeeded'), 0)::float8`,
      ),
    },
  ];
}

const STATE_GAUGES: StateGauge[] = [
  {
    name: 'flightdeck_jobs',
    help: 'Jobs that have not ended, by status (and workspace and agent, when tenant labels are shown)',
    labelNames: ['status', 'workspace', 'agent'],
    read: (em) =>
      byLabels(
        em,
        `SELECT j.status, j.workspace_id AS workspace, coalesce(a.name, 'none') AS agent, count(*)::int AS value
           FROM job j LEFT JOIN job_agent a ON a.id = j.job_agent_id
          WHERE j.status IN ${ACTIVE_JOB_STATUS_LIST}
          GROUP BY 1, 2, 3`,
        ['status', 'workspace', 'agent'],
      ),
  },
  {
    name: 'flightdeck_job_queue_depth',
    help: 'Queued jobs waiting for a pull agent (by workspace and agent, when tenant labels are shown)',
    labelNames: ['workspace', 'agent'],
    read: (em) =>
      byLabels(
        em,
        `SELECT a.workspace_id AS workspace, a.name AS agent, count(j.id)::int AS value
           FROM job_agent a LEFT JOIN job j ON j.job_agent_id = a.id AND j.status = 'queued'
          WHERE a.type = 'http-pull' GROUP BY a.workspace_id, a.name`,
        ['workspace', 'agent'],
      ),
  },
  {
    name: 'flightdeck_job_queue_oldest_seconds',
    help: 'Age of the oldest queued job of a pull agent, 0 when none is queued (by workspace and agent, when tenant labels are shown)',
    labelNames: ['workspace', 'agent'],
    aggregator: 'max',
    read: (em) =>
      byLabels(
        em,
        `SELECT a.workspace_id AS workspace, a.name AS agent,
                coalesce(extract(epoch FROM now() - min(j.created_at)), 0)::float8 AS value
           FROM job_agent a LEFT JOIN job j ON j.job_agent_id = a.id AND j.status = 'queued'
          WHERE a.type = 'http-pull' GROUP BY a.workspace_id, a.name`,
        ['workspace', 'agent'],
      ),
  },
  {
    name: 'flightdeck_outbox_backlog',
    help: 'Orchestration messages not yet delivered to Temporal',
    labelNames: [],
    read: (em) => byLabels(em, `SELECT count(*)::int AS value FROM outbox`, []),
  },
  {
    name: 'flightdeck_outbox_oldest_seconds',
    help: 'Age of the oldest undelivered orchestration message (0 when none waits)',
    labelNames: [],
    read: (em) =>
      byLabels(
        em,
        `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS value FROM outbox`,
        [],
      ),
  },
  {
    name: 'flightdeck_releases',
    help: 'Releases that have not ended, by phase',
    labelNames: ['phase'],
    read: (em) =>
      byLabels(
        em,
        `SELECT p.phase, count(r.id)::int AS value
           FROM unnest(ARRAY['pending', 'running']) AS p(phase) LEFT JOIN release r ON r.phase = p.phase
          GROUP BY p.phase`,
        ['phase'],
      ),
  },
  ...doraGauges(),
  {
    name: 'flightdeck_gate_waits',
    help: 'Pending releases held by a rule (waiting or blocked), by rule kind and state',
    labelNames: ['rule', 'state'],
    read: (em) =>
      byLabels(
        em,
        `SELECT r->>'kind' AS rule, r->>'state' AS state, count(*)::int AS value
           FROM release rl, jsonb_array_elements(coalesce(rl.evaluation->'rules', '[]'::jsonb)) r
          WHERE rl.phase = 'pending' AND r->>'state' IN ('waiting', 'blocked')
          GROUP BY 1, 2`,
        ['rule', 'state'],
      ),
  },
];

/**
 * The state gauges, on the registry /metrics serves: all of them read together, at most once per
 * `intervalMs` (a read is counted by `flightdeck_metrics_state_reads_total`).
 */
export function registerStateGauges(registry: Registry, orm: Database, intervalMs: number): void {
  const reads = new Counter({
    name: 'flightdeck_metrics_state_reads_total',
    help: 'Reads of the database-backed gauges: at most one per interval, however often /metrics is scraped',
    registers: [registry],
  });
  const state = sharedRead(intervalMs, async () => {
    reads.inc();
    const em = orm.em.fork() as EntityManager;
    const values = new Map<string, Labelled[]>();
    for (const gauge of STATE_GAUGES) values.set(gauge.name, await gauge.read(em));
    return values;
  });
  for (const gauge of STATE_GAUGES) {
    new Gauge({
      name: gauge.name,
      help: gauge.help,
      labelNames: gauge.labelNames,
      aggregator: gauge.aggregator ?? 'sum',
      registers: [registry],
      async collect() {
        const rows = (await state()).get(gauge.name) ?? [];
        this.reset();
        for (const row of rows) this.set(row.labels, row.value);
      },
    });
  }
}
