import type { EntityManager } from '@mikro-orm/postgresql';
import { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { freePort } from '../cli/embedded/processes';
import { openDatabase, type Database } from '../db/database';
import { newId } from '../db/ids';
import { lockWorkspaceTargets, syncReleaseTargets } from '../engine/targets';
import { SecretBox } from '../db/secrets';
import { ApiKeyStore } from '../application/apiKeys';
import { WorkspaceStore } from '../application/workspaces';
import { installTemporalRuntime } from '../worker/temporalRuntime';
import { workerTuning } from '../worker/tuning';
import { workflowIds } from '../workflows/ids';
import { floorWorkflow } from './floor/workflows';
import {
  benchEnvironment,
  bundleQuietly,
  inParallel,
  percentile,
  rssMb,
  round,
  spawnRole,
  startFlightdeckStack,
  type FlightdeckStack,
  waitFor,
  waitForServices,
  workspaceApi,
} from './environment';
import { summarize, type Figures } from './lanes';

/**
 * First, the sequence a platform team runs, on the stack `npm start` runs: an inventory sync of
 * 1,000 resources through the API, 8 upserts at a time (each a new target of a deployment already
 * running a version, so each gets a release and a job), then a ready version of another deployment
 * that takes them all; from the version request, the first and the last job queued. Each run on a fresh
 * `flightdeck start` (everything embedded, its own data), five runs, printed as medians with every
 * run's value (BENCH_FANOUT_SEQUENCE_RUNS, BENCH_FANOUT_SEQUENCE_TARGETS; BENCH_FANOUT_ONLY=sequence
 * measures only this, for an A/B against another checkout).
 *
 * Then a version becoming ready on 100, 1,000 and 10,000 release targets (BENCH_FANOUT_SIZES), with
 * pull agents, measured on the stack users run:
 * - on the README's default, the dev server persisting to its SQLite file exactly as `flightdeck
 *   start` configures it, and on an in-memory dev server (BENCH_FANOUT_SERVERS=embedded,memory);
 *   the API and the worker as their own processes, built, with their default settings;
 * - from the version request: the first and the last job queued, and every release's workflow
 *   started (its start taken from the outbox by the relay);
 * - the floor: as many trivial workflows, started the way the relay starts releases (eager, from a
 *   client on the worker's connection, as many at once) and completed, on the same server;
 * - history events of a release waiting with its job queued, and of one run to completion (a sample
 *   claimed and reported through the API), and any failed workflow task among them;
 * - once per server, the fan-out right after a burst of 1,000 resource upserts through the API
 *   (BENCH_FANOUT_BURST), which also give another deployment with a ready version 1,000 new
 *   targets: an inventory sync, then a version;
 * - peak and idle memory of the API and the worker; and of each process of `flightdeck start`,
 *   everything embedded, after a fan-out to the largest size (BENCH_FANOUT_START=0 skips it).
 */
const SIZES = (process.env.BENCH_FANOUT_SIZES ?? '100,1000,10000').split(',').map(Number);
const SERVERS = (process.env.BENCH_FANOUT_SERVERS ?? 'embedded,memory').split(',') as (
  'embedded' | 'memory'
)[];
const BURST = Number(process.env.BENCH_FANOUT_BURST ?? 1_000);
const START_RUN = process.env.BENCH_FANOUT_START !== '0';
const SEQUENCE_RUNS = Number(process.env.BENCH_FANOUT_SEQUENCE_RUNS ?? 5);
const SEQUENCE_TARGETS = Number(process.env.BENCH_FANOUT_SEQUENCE_TARGETS ?? 1_000);
/** Upserts in flight during the sync, as a provider's sync job sends them. */
const SEQUENCE_UPSERTS_IN_FLIGHT = 8;
const ONLY_SEQUENCE = process.env.BENCH_FANOUT_ONLY === 'sequence';
const TASK_QUEUE = 'bench-fanout';
const FLOOR_QUEUE = 'bench-fanout-floor';
/** As many starts in flight as the relay's lane has (worker/outboxRelay.ts). */
const STARTS_IN_FLIGHT = 32;
/** Releases whose histories are read, and run to completion. */
const SAMPLE = 20;

type Call = ReturnType<typeof workspaceApi>;
type Query = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

export async function run(): Promise<Record<string, unknown>> {
  const sequence = await measureSequence();
  if (ONLY_SEQUENCE) return { sequence };
  const servers: Record<string, unknown> = {};
  for (const server of SERVERS) servers[server] = await onServer(server);
  const maxSize = Math.max(...SIZES);
  return { sequence, servers, ...(START_RUN ? { start: await onFlightdeckStart(maxSize) } : {}) };
}

/** The sync-then-ship sequence, each run on a fresh `flightdeck start`: medians and every run. */
async function measureSequence() {
  const runs: Figures[] = [];
  for (let n = 0; n < SEQUENCE_RUNS; n++) runs.push(await sequenceOnFreshStack());
  return {
    targets: SEQUENCE_TARGETS,
    upsertsInFlight: SEQUENCE_UPSERTS_IN_FLIGHT,
    ...summarize(runs),
  };
}

/**
 * `work` on a fresh `flightdeck start` (everything embedded, its own data): with a handle on its
 * database, its workspace's API and a pull agent named `puller`; stopped after.
 */
async function onFreshStart<T>(
  work: (on: { stack: FlightdeckStack; fork: () => EntityManager; query: Query; call: Call }) => Promise<T>,
): Promise<T> {
  const stack = await startFlightdeckStack();
  let orm: Database | undefined;
  try {
    orm = await openDatabase({ url: stack.databaseUrl, poolMax: 2 });
    const fork = () => orm!.em.fork() as EntityManager;
    const query: Query = (sql, params = []) => fork().execute(sql, params);
    const call = workspaceApi(stack.apiUrl, stack.workspaceId, stack.apiKey);
    await call('PUT', `/job-agents/${newId()}`, { name: 'puller', type: 'http-pull', config: {} });
    return await work({ stack, fork, query, call });
  } finally {
    await orm?.close();
    await stack.stop();
  }
}

function sequenceOnFreshStack(): Promise<Figures> {
  return onFreshStart(async ({ query, call }) => {
    const system = await call('POST', '/systems', { name: 'inventory' });
    const lane = laneBuilder(call, system.id);
    // A deployment already running a version takes every synced resource (a release and a job each).
    const running = await lane('inventory');
    await call('POST', `/deployments/${running.id}/versions`, { tag: '0.9.0' });
    const shipped = await lane.deployment('inventory-next', 'inventory');
    const syncStarted = performance.now();
    await inParallel(SEQUENCE_TARGETS, SEQUENCE_UPSERTS_IN_FLIGHT, async (n) => {
      await call('PUT', `/resources/identifier/inventory-${n}`, {
        name: `inventory-${n}`,
        version: 'v1',
        kind: 'service',
        metadata: { lane: 'inventory' },
      });
    });
    const syncSeconds = round((performance.now() - syncStarted) / 1000);
    const { figures } = await measureFanout(call, query, shipped.id, SEQUENCE_TARGETS);
    return {
      syncSeconds,
      firstQueuedSeconds: figures.firstQueuedSeconds,
      lastQueuedSeconds: figures.lastQueuedSeconds,
      workflowsStartedSeconds: figures.workflowsStartedSeconds,
    };
  });
}

/** The sizes, the burst and the floors on one dev server, with the API and the worker as their own processes. */
async function onServer(server: 'embedded' | 'memory') {
  const env = await benchEnvironment(`fanout_${server}`, { persistent: server === 'embedded' });
  await installTemporalRuntime(env.logger);
  const fork = () => env.orm.em.fork() as EntityManager;
  const query: Query = (sql, params = []) => fork().execute(sql, params);
  const port = await freePort();
  const common = {
    DATABASE_URL: env.databaseUrl,
    TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    FLIGHTDECK_SECRET_KEY: SecretBox.generateKey(),
  };
  const api = spawnRole('api', { ...common, FLIGHTDECK_PORT: String(port) });
  const worker = spawnRole('worker', common);
  const connection = await NativeConnection.connect({ address: env.temporalAddress });
  const client = new Client({ connection });
  const floor = await startFloorWorker(connection);
  try {
    const workspace = await new WorkspaceStore(fork()).create({ name: 'Fan-out' });
    const { key } = await new ApiKeyStore(fork()).create({ workspaceId: workspace.id, name: 'bench' });
    const apiUrl = `http://127.0.0.1:${port}`;
    const call = workspaceApi(apiUrl, workspace.id, key);
    await waitForServices(apiUrl, connection, TASK_QUEUE);
    const agentId = newId();
    await call('PUT', `/job-agents/${agentId}`, { name: 'puller', type: 'http-pull', config: {} });
    const system = await call('POST', '/systems', { name: 'fan-out' });
    const lane = laneBuilder(call, system.id);

    const runs = [];
    for (const size of SIZES) {
      const deployment = await lane(`fanout-${size}`);
      await insertResources(query, workspace.id, deployment.label, size);
      await fork().transactional(async (em) => {
        await lockWorkspaceTargets(em, workspace.id);
        await syncReleaseTargets(em, workspace.id, { deploymentIds: [deployment.id] });
      });
      const fanout = await measureFanout(call, query, deployment.id, size);
      const histories = await readHistories(
        client,
        query,
        call,
        apiUrl,
        workspace.id,
        key,
        agentId,
        fanout.versionId,
      );
      const floorSeconds = await floor.measure(client, size);
      runs.push({
        targets: size,
        ...fanout.figures,
        floor: { seconds: round(floorSeconds), workflowsPerSecond: round(size / floorSeconds, 1) },
        ratio: {
          lastQueued: round(fanout.figures.lastQueuedSeconds / floorSeconds, 2),
          workflowsStarted: round(fanout.figures.workflowsStartedSeconds / floorSeconds, 2),
        },
        historyEvents: histories,
      });
    }

    const burst = BURST > 0 ? await measureBurst(call, query, client, lane, workspace.id) : undefined;
    await waitFor(
      async () => (await count(query, 'SELECT count(*)::int AS n FROM outbox')) === 0,
      'a quiet outbox',
    );
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    return {
      runs,
      ...(burst ? { burst } : {}),
      peakRssMb: {
        api: api.peakRssMb(),
        worker: worker.peakRssMb(),
        ...(env.temporalPid ? { temporalServer: rssMb(env.temporalPid, 'VmHWM') } : {}),
      },
      idleRssMb: { api: api.rssMb(), worker: worker.rssMb() },
    };
  } finally {
    await floor.stop();
    await api.stop();
    await worker.stop();
    await connection.close();
    await env.close();
  }
}

/**
 * Records for a lane of resources (metadata `lane`): an environment that takes them, and deployments
 * of the pull agent that take them, linked to the benchmark's system.
 */
function laneBuilder(call: Call, systemId: string) {
  const selector = (label: string) => `resource.metadata["lane"] == "${label}"`;
  const deployment = async (slug: string, label: string) => {
    const created = await call('POST', '/deployments', {
      name: slug,
      slug,
      resourceSelector: selector(label),
      jobAgents: [{ ref: 'puller' }],
    });
    await call('PUT', `/systems/${systemId}/deployments/${created.id}`);
    return { id: created.id, label };
  };
  const lane = async (label: string) => {
    const environment = await call('POST', '/environments', {
      name: label,
      resourceSelector: selector(label),
    });
    await call('PUT', `/systems/${systemId}/environments/${environment.id}`);
    return deployment(label, label);
  };
  return Object.assign(lane, { deployment });
}

async function insertResources(query: Query, workspaceId: string, label: string, size: number) {
  await query(
    `INSERT INTO resource (id, workspace_id, identifier, name, version, kind, metadata)
     SELECT (r->>'id')::uuid, ?::uuid, r->>'identifier', r->>'identifier', 'v1', 'service', r->'metadata'
       FROM jsonb_array_elements(?::jsonb) AS r`,
    [
      workspaceId,
      JSON.stringify(
        Array.from({ length: size }, (_, n) => ({
          id: newId(),
          identifier: `${label}-${n}`,
          metadata: { lane: label },
        })),
      ),
    ],
  );
}

async function count(query: Query, sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await query(sql, params);
  return Number(row?.n ?? 0);
}

/**
 * The version request, then the first and last job queued (their creation times, by the database,
 * against the request's start) and the moment every release's workflow has been started.
 */
async function measureFanout(call: Call, query: Query, deploymentId: string, size: number) {
  const requested = Date.now();
  const version = await call('POST', `/deployments/${deploymentId}/versions`, { tag: '1.0.0' });
  let workflowsStartedMs = 0;
  await waitFor(
    async () => {
      const [row] = await query(
        `SELECT (SELECT count(*)::int FROM job WHERE deployment_id = ? AND status = 'queued') AS queued,
                (SELECT count(*)::int FROM outbox WHERE kind = 'release.start'
                    AND payload->'release'->>'versionId' = ?) AS unstarted`,
        [deploymentId, version.id],
      );
      if (row?.queued !== size || row?.unstarted !== 0) return false;
      workflowsStartedMs = Date.now() - requested;
      return true;
    },
    `${size} queued jobs and their workflows`,
    1_800_000,
  );
  const [times] = await query(
    `SELECT (extract(epoch FROM min(created_at)) * 1000)::float8 AS first,
            (extract(epoch FROM max(created_at)) * 1000)::float8 AS last
       FROM job WHERE deployment_id = ?`,
    [deploymentId],
  );
  const seconds = (at: unknown) => round((Number(at) - requested) / 1000);
  const lastQueuedSeconds = seconds(times!.last);
  return {
    versionId: version.id,
    figures: {
      firstQueuedSeconds: seconds(times!.first),
      lastQueuedSeconds,
      jobsPerSecond: round(size / lastQueuedSeconds, 1),
      workflowsStartedSeconds: round(workflowsStartedMs / 1000),
      releasesPerSecond: round(size / (workflowsStartedMs / 1000), 1),
    },
  };
}

/** A workflow's history, as event type names (`WORKFLOW_TASK_COMPLETED`…). */
async function eventTypes(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((event) =>
    (proto.api.enums.v1.EventType[event.eventType ?? 0] ?? String(event.eventType)).replace(
      /^EVENT_TYPE_/,
      '',
    ),
  );
}

/**
 * Histories of a sample of the version's releases: waiting with their job queued (after their
 * first task), then claimed and reported successful through the API, once they completed.
 */
async function readHistories(
  client: Client,
  query: Query,
  call: Call,
  apiUrl: string,
  workspaceId: string,
  key: string,
  agentId: string,
  versionId: string,
) {
  const sample = (await query(
    `SELECT r.id AS release_id, j.id AS job_id FROM release r JOIN job j ON j.release_id = r.id
      WHERE r.version_id = ? ORDER BY random() LIMIT ?`,
    [versionId, SAMPLE],
  )) as { release_id: string; job_id: string }[];
  const waiting = await Promise.all(
    sample.map(async (s) => {
      let types: string[] = [];
      await waitFor(async () => {
        types = await eventTypes(client, workflowIds.release(s.release_id));
        return types.includes('TIMER_STARTED');
      }, 'a release waiting for its job').catch((error: Error) => {
        throw new Error(`${error.message}; release/${s.release_id}: ${types.join(' ')}`);
      });
      return types;
    }),
  );
  const ws = `${apiUrl}/v1/workspaces/${workspaceId}`;
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  for (const s of sample) {
    const claim = await fetch(`${ws}/job-agents/${agentId}/jobs/${s.job_id}/claim`, {
      method: 'POST',
      headers,
    });
    if (claim.status !== 200) throw new Error(`claim answered ${claim.status}`);
    await call('PUT', `/jobs/${s.job_id}/status`, { status: 'successful' });
  }
  const completed = await Promise.all(
    sample.map(async (s) => {
      let types: string[] = [];
      await waitFor(async () => {
        types = await eventTypes(client, workflowIds.release(s.release_id));
        return types.includes('WORKFLOW_EXECUTION_COMPLETED');
      }, 'a completed release');
      return types;
    }),
  );
  const lengths = (histories: string[][]) => histories.map((h) => h.length).sort((a, b) => a - b);
  const failedTasks = [...waiting, ...completed].filter((h) => h.includes('WORKFLOW_TASK_FAILED')).length;
  return {
    sampled: sample.length,
    waitingWithJobQueued: { median: percentile(lengths(waiting), 50), max: lengths(waiting).at(-1) },
    completed: { median: percentile(lengths(completed), 50), max: lengths(completed).at(-1) },
    historiesWithAFailedWorkflowTask: failedTasks,
    example: { waiting: waiting[0], completed: completed[0] },
  };
}

/**
 * The realistic order: an inventory sync of `BURST` resources through the API (each also a new
 * target of a deployment whose version is ready, so target rollouts run), then a version of
 * another deployment on the same resources.
 */
async function measureBurst(
  call: Call,
  query: Query,
  client: Client,
  lane: ReturnType<typeof laneBuilder>,
  workspaceId: string,
) {
  const label = 'burst';
  const running = await lane(label);
  await call('POST', `/deployments/${running.id}/versions`, { tag: '0.9.0' });
  const fresh = await lane.deployment(`${label}-new`, label);

  const upsertsStarted = performance.now();
  await inParallel(BURST, 16, async (n) => {
    await call('PUT', `/resources/identifier/${label}-${n}`, {
      name: `${label}-${n}`,
      version: 'v1',
      kind: 'service',
      metadata: { lane: label },
    });
  });
  const upsertSeconds = (performance.now() - upsertsStarted) / 1000;
  const fanout = await measureFanout(call, query, fresh.id, BURST);
  await waitFor(
    async () =>
      (await count(
        query,
        `SELECT count(*)::int AS n FROM job WHERE deployment_id = ? AND status = 'queued'`,
        [running.id],
      )) === BURST,
    'the new targets of the running deployment',
    600_000,
  );
  let rolloutRuns = 0;
  for await (const execution of client.workflow.list({
    query: `WorkflowId = '${workflowIds.targetRollout(workspaceId)}'`,
  })) {
    if (execution) rolloutRuns++;
  }
  return {
    upserts: BURST,
    upsertSeconds: round(upsertSeconds),
    ...fanout.figures,
    targetRolloutRuns: rolloutRuns,
  };
}

/** A worker for trivial workflows, sized as ours, and a client on its connection that starts them eagerly. */
async function startFloorWorker(connection: NativeConnection) {
  let completed = 0;
  const worker = await Worker.create({
    connection,
    taskQueue: FLOOR_QUEUE,
    workflowBundle: await bundleQuietly(require.resolve('./floor/workflows')),
    sinks: { floor: { completed: { fn: () => void completed++, callDuringReplay: false } } },
    ...workerTuning(),
  });
  const running = worker.run();
  return {
    /** Seconds to start and complete `size` trivial workflows. */
    async measure(client: Client, size: number): Promise<number> {
      completed = 0;
      const started = performance.now();
      await inParallel(size, STARTS_IN_FLIGHT, async (n) => {
        await client.workflow.start(floorWorkflow, {
          taskQueue: FLOOR_QUEUE,
          workflowId: `floor-${size}-${n}-${newId()}`,
          requestEagerStart: true,
        });
      });
      await waitFor(async () => completed >= size, `${size} floor workflows`, 1_800_000);
      return (performance.now() - started) / 1000;
    },
    async stop() {
      worker.shutdown();
      await running;
    },
  };
}

/**
 * `flightdeck start` as a user runs it (PostgreSQL and Temporal embedded, in a data directory of
 * its own, the API and the worker as its child processes): a fan-out to `size` targets, then the
 * memory of each of its processes at its peak and once idle.
 */
function onFlightdeckStart(size: number) {
  return onFreshStart(async ({ stack, fork, query, call }) => {
    const system = await call('POST', '/systems', { name: 'fan-out' });
    const deployment = await laneBuilder(call, system.id)(`start-${size}`);
    await insertResources(query, stack.workspaceId, deployment.label, size);
    await fork().transactional(async (em) => {
      await lockWorkspaceTargets(em, stack.workspaceId);
      await syncReleaseTargets(em, stack.workspaceId, { deploymentIds: [deployment.id] });
    });
    const fanout = await measureFanout(call, query, deployment.id, size);
    const peakRssMb = stack.memoryPeak();
    // Idle: nothing left to relay, and a minute for the worker's caches and the heap to settle.
    await waitFor(
      async () => (await count(query, 'SELECT count(*)::int AS n FROM outbox')) === 0,
      'a quiet outbox',
    );
    await new Promise((resolve) => setTimeout(resolve, 60_000));
    return { targets: size, ...fanout.figures, peakRssMb, idleRssMb: stack.memoryNow() };
  });
}
