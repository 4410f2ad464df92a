import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { Pool } from 'pg';
import { workflowIds } from '../workflows/ids';
import {
  count,
  queuedJobs,
  round,
  sqliteBytes,
  workflowBacklog,
  startFlightdeckStack,
  waitFor,
  workspaceApi,
  type Query,
} from './environment';
import { claimAll, fanOut, laneBuilder, reaperLag, type Call, type LaneDeployment } from './lanes';

/**
 * A new version behind the trailing work of large fan-outs, on `flightdeck start` from dist/:
 * BENCH_TRAILING_BIG (2) versions fan out to BENCH_TRAILING_TARGETS (10,000) targets each, one
 * right after the other, so their release workflows' starts trail behind by the ten thousand; then,
 * while they drain, a version of a deployment with one target and one with BENCH_TRAILING_SECOND
 * (1,000) targets, and an approval of a release waiting for one, timed to meet BENCH_TRAILING_LEASES
 * (1,000) leases of the first big fan-out's jobs expiring together. Printed: each fan-out's time to its last queued job, the backlog it met, when the
 * second versions' first and last jobs were queued and where their rollouts spent the time (from
 * the rollout workflow's history), how long the approved release took to its job, the reaper's lag,
 * how long the trailing work took to drain, each process's peak
 * memory and the size of Temporal's database file.
 */
const TARGETS = Number(process.env.BENCH_TRAILING_TARGETS ?? 10_000);
const BIG = Number(process.env.BENCH_TRAILING_BIG ?? 2);
const SECOND = Number(process.env.BENCH_TRAILING_SECOND ?? 1_000);
const LEASES = Number(process.env.BENCH_TRAILING_LEASES ?? 1_000);
const LEASE_SECONDS = 20;
const WRITERS = 8;
const CLAIMERS = 32;
const DRAIN_WAIT_MS = Number(process.env.BENCH_TRAILING_DRAIN_WAIT_MS ?? 1_800_000);

export async function run(): Promise<Record<string, unknown>> {
  const stack = await startFlightdeckStack();
  const pool = new Pool({ connectionString: stack.databaseUrl, max: 4 });
  const query: Query = async (sql, params = []) => (await pool.query(sql, params)).rows;
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const temporal = new Client({ connection });
  try {
    const call = workspaceApi(stack.apiUrl, stack.workspaceId, stack.apiKey);
    await waitFor(async () => (await fetch(`${stack.apiUrl}/readyz`)).ok, 'the API to be ready');
    const system = await call('POST', '/systems', { name: 'trailing' });
    const lanes = laneBuilder(stack, call, query, system.id, WRITERS);
    const lane = await lanes.create('trailing', TARGETS, 1, [
      ...Array.from({ length: BIG }, (_, n) => ({
        name: `big-${n}`,
        size: TARGETS,
        leaseSeconds: LEASE_SECONDS,
      })),
      { name: 'second', size: SECOND, leaseSeconds: 300 },
      { name: 'single', size: 1, leaseSeconds: 300 },
      { name: 'gated', size: 1, leaseSeconds: 300 },
    ]);
    const gated = lane.deployment('gated');
    await call('POST', '/policies', {
      name: 'trailing approval',
      selector: `deployment.id == "${gated.id}"`,
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    await call('POST', `/deployments/${gated.id}/versions`, { tag: '1.0.0' });
    const outboxBacklog = () =>
      count(query, `SELECT count(*)::int AS n FROM outbox WHERE kind = 'release.start'`);

    const bigFanouts = [];
    for (let n = 0; n < BIG; n++) {
      const backlog = await outboxBacklog();
      const seconds = await fanOut(call, query, lane.deployment(`big-${n}`), '1.0.0');
      bigFanouts.push({ targets: TARGETS, startsTrailingBefore: backlog, lastQueuedSeconds: round(seconds) });
    }

    // Leases of the first fan-out's jobs, taken now and expiring together while the next versions start.
    const leased = await query<{ id: string }>(
      `SELECT id FROM job WHERE job_agent_id = $1 AND status = 'queued' LIMIT $2`,
      [lane.deployment('big-0').agentId, LEASES],
    );
    const expiries = await claimAll(stack, lane.deployment('big-0').agentId, leased, CLAIMERS);
    await sleep(Math.max(0, Math.min(...expiries.values()) - Date.now() - 500));
    const startsTrailing = await outboxBacklog();
    const workflowTasksWaiting = await workflowBacklog(connection, 'flightdeck');
    const [single, second, approval] = await Promise.all([
      behind(call, query, temporal, lane.deployment('single')),
      behind(call, query, temporal, lane.deployment('second')),
      approve(call, query, gated),
    ]);
    const reaper = await reaperLag(query, lane.deployment('big-0').agentId, expiries, 600_000);

    const drainStarted = performance.now();
    const left = async () => ({
      outbox: await count(query, 'SELECT count(*)::int AS n FROM outbox'),
      workflowTasks: await workflowBacklog(connection, 'flightdeck'),
    });
    let rest = await left();
    while (rest.outbox + rest.workflowTasks > 0 && performance.now() - drainStarted < DRAIN_WAIT_MS) {
      await sleep(1_000);
      rest = await left();
    }
    const drain = { seconds: round((performance.now() - drainStarted) / 1000, 1), left: rest };
    return {
      stack:
        'flightdeck start from dist/: embedded PostgreSQL, embedded Temporal (SQLite), API and worker processes',
      bigFanouts,
      startsTrailing,
      workflowTasksWaiting,
      behindTrailingWork: { singleTarget: single, [`targets${SECOND}`]: second, approval },
      [`reaperWithLeases${LEASES}`]: reaper,
      drainAfterwards: drain,
      memoryPeakMb: stack.memoryPeak(),
      temporalSqliteMb: round(sqliteBytes(stack) / 2 ** 20),
    };
  } finally {
    await connection.close();
    await pool.end();
    await stack.stop();
  }
}

/**
 * A version of the deployment while others' work trails: when its first and last jobs were queued,
 * and when its rollout workflow started, took its first task and ran its first batch activity.
 */
async function behind(call: Call, query: Query, temporal: Client, deployment: LaneDeployment) {
  const sent = Date.now();
  const version = await call('POST', `/deployments/${deployment.id}/versions`, { tag: '1.0.0' });
  let firstQueuedSeconds: number | undefined;
  await waitFor(
    async () => {
      const queued = await queuedJobs(query, deployment.agentId);
      if (queued > 0) firstQueuedSeconds ??= (Date.now() - sent) / 1000;
      return queued === deployment.size;
    },
    `${deployment.size} queued jobs`,
    1_800_000,
  );
  const lastQueuedSeconds = (Date.now() - sent) / 1000;
  return {
    targets: deployment.size,
    firstQueuedSeconds: round(firstQueuedSeconds!),
    lastQueuedSeconds: round(lastQueuedSeconds),
    rolloutSeconds: await rolloutTimeline(temporal, version.id, sent),
  };
}

/** The waiting release of the gated deployment approved: how long until its job was queued. */
async function approve(call: Call, query: Query, deployment: LaneDeployment) {
  await waitFor(
    async () =>
      (await count(query, 'SELECT count(*)::int AS n FROM release WHERE deployment_id = $1', [
        deployment.id,
      ])) === 1,
    'the gated release',
  );
  const [release] = await query<{ id: string }>('SELECT id FROM release WHERE deployment_id = $1', [
    deployment.id,
  ]);
  const sent = Date.now();
  await call('POST', `/releases/${release!.id}/approve`, { reason: 'bench' });
  await waitFor(
    async () => (await queuedJobs(query, deployment.agentId)) === 1,
    'the approved release to queue its job',
    600_000,
  );
  return { jobQueuedSeconds: round((Date.now() - sent) / 1000) };
}

const EventType = proto.api.enums.v1.EventType;

/** Seconds from the version's request to the first event of each kind in its rollout's history. */
async function rolloutTimeline(temporal: Client, versionId: string, sent: number) {
  const history = await temporal.workflow.getHandle(workflowIds.versionRollout(versionId)).fetchHistory();
  const kinds = {
    started: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    firstTaskStarted: EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    batchesScheduled: EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    batchesStarted: EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
    batchesCompleted: EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
  };
  return Object.fromEntries(
    Object.entries(kinds).map(([name, type]) => {
      const event = history.events?.find((each) => each.eventType === type);
      const at = event?.eventTime
        ? Number(event.eventTime.seconds) * 1000 + event.eventTime.nanos! / 1e6
        : NaN;
      return [name, round((at - sent) / 1000)];
    }),
  );
}
