import type { EntityManager } from '@mikro-orm/postgresql';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from './database';

/**
 * Flightdeck's domain metrics, beside the HTTP and process ones (api/middleware/metrics.ts).
 *
 * Events are counted where they happen, in this process: claims and heartbeats in the API, lease
 * expiries and version fan-outs in the worker (`flightdeck start` runs both in one process; a
 * worker run on its own counts its events in its own process). States — active jobs by status and
 * agent, queues, the outbox, active releases by phase, gate waits — are read from the database at
 * each scrape, so every API instance reports the same, whichever process changed them; they count
 * what has not ended (history would make every scrape read every job ever run).
 */
export const domainEvents = new Registry();

export const jobClaims = new Counter({
  name: 'flightdeck_job_claims_total',
  help: 'Jobs handed to pull agents by a claim, by agent',
  labelNames: ['agent'],
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

/** A gauge whose values are read from the database at each scrape. */
function stateGauge(
  registry: Registry,
  orm: Database,
  spec: {
    name: string;
    help: string;
    labelNames: string[];
    read: (em: EntityManager) => Promise<Labelled[]>;
  },
): void {
  new Gauge({
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames,
    registers: [registry],
    async collect() {
      const rows = await spec.read(orm.em.fork() as EntityManager);
      this.reset();
      for (const row of rows) this.set(row.labels, row.value);
    },
  });
}

const byLabels = async (em: EntityManager, sql: string, labelNames: string[]): Promise<Labelled[]> => {
  const rows = await em.execute<Record<string, unknown>[]>(sql);
  return rows.map((row) => ({
    labels: Object.fromEntries(labelNames.map((name) => [name, String(row[name] ?? '')])),
    value: Number(row.value),
  }));
};

/** The state gauges, on the registry /metrics serves. */
export function registerStateGauges(registry: Registry, orm: Database): void {
  stateGauge(registry, orm, {
    name: 'flightdeck_jobs',
    help: 'Jobs that have not ended, by status and agent',
    labelNames: ['status', 'agent'],
    read: (em) =>
      byLabels(
        em,
        `SELECT j.status, coalesce(a.name, 'none') AS agent, count(*)::int AS value
           FROM job j LEFT JOIN job_agent a ON a.id = j.job_agent_id
          WHERE j.status IN ('pending', 'queued', 'triggered', 'in_progress', 'action_required')
          GROUP BY 1, 2`,
        ['status', 'agent'],
      ),
  });
  stateGauge(registry, orm, {
    name: 'flightdeck_job_queue_depth',
    help: 'Queued jobs waiting for a pull agent, by agent',
    labelNames: ['agent'],
    read: (em) =>
      byLabels(
        em,
        `SELECT a.name AS agent, count(j.id)::int AS value
           FROM job_agent a LEFT JOIN job j ON j.job_agent_id = a.id AND j.status = 'queued'
          WHERE a.type = 'http-pull' GROUP BY a.name`,
        ['agent'],
      ),
  });
  stateGauge(registry, orm, {
    name: 'flightdeck_job_queue_oldest_seconds',
    help: 'Age of the oldest queued job, by agent (0 when none is queued)',
    labelNames: ['agent'],
    read: (em) =>
      byLabels(
        em,
        `SELECT a.name AS agent, coalesce(extract(epoch FROM now() - min(j.created_at)), 0)::float8 AS value
           FROM job_agent a LEFT JOIN job j ON j.job_agent_id = a.id AND j.status = 'queued'
          WHERE a.type = 'http-pull' GROUP BY a.name`,
        ['agent'],
      ),
  });
  stateGauge(registry, orm, {
    name: 'flightdeck_outbox_backlog',
    help: 'Orchestration messages not yet delivered to Temporal',
    labelNames: [],
    read: (em) => byLabels(em, `SELECT count(*)::int AS value FROM outbox`, []),
  });
  stateGauge(registry, orm, {
    name: 'flightdeck_outbox_oldest_seconds',
    help: 'Age of the oldest undelivered orchestration message (0 when none waits)',
    labelNames: [],
    read: (em) =>
      byLabels(
        em,
        `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS value FROM outbox`,
        [],
      ),
  });
  stateGauge(registry, orm, {
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
  });
  stateGauge(registry, orm, {
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
  });
}
