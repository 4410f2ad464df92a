import type { EntityManager } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { freePort } from '../cli/embedded/processes';
import { ApiClient } from '../cli/apiClient';
import { claimJob } from '../db/jobMoves';
import { newId } from '../db/ids';
import { SecretBox } from '../db/secrets';
import { ApiKeyStore } from '../db/stores/apiKeys';
import { WorkspaceStore } from '../db/stores/workspaces';
import { installTemporalRuntime } from '../worker/temporalRuntime';
import { timerFloorWorkflow } from './floor/workflows';
import {
  benchEnvironment,
  bundleQuietly,
  inParallel,
  percentile,
  round,
  spawnRole,
  waitFor,
  waitForServices,
  waitForWorker,
  workspaceApi,
} from './environment';

/**
 * Pull delivery under load, with the API and the worker as their own processes:
 * - claims: 32 agents racing over queued jobs (claims per second, p50/p99 of every claim request);
 * - polls: 100 agents with 100 queued jobs each (10,000 in all), each polling 20 times;
 * - reaper lag: 1,000 leases made to expire at the same instant; lag = the job's requeue time − the
 *   expiry, both by the database's clock;
 * - the floors: the bare claim statement run straight on the same database by 32 connections, and
 *   as many trivial workflows whose durable timers fire at one instant on the same Temporal server.
 */
const TASK_QUEUE = 'bench-pull';
const CLAIM_JOBS = Number(process.env.BENCH_PULL_CLAIM_JOBS ?? 2_000);
const CLAIMERS = 32;
const CLAIM_PAGE = 32;
const POLL_AGENTS = 100;
const JOBS_PER_POLL_AGENT = 100;
const POLLS_PER_AGENT = 20;
const LEASES = Number(process.env.BENCH_PULL_LEASES ?? 1_000);

export async function run(): Promise<Record<string, unknown>> {
  const env = await benchEnvironment('pull');
  installTemporalRuntime(env.logger);
  const fork = () => env.orm.em.fork() as EntityManager;
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const common = {
    DATABASE_URL: env.databaseUrl,
    TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    FLIGHTDECK_SECRET_KEY: SecretBox.generateKey(),
    DATABASE_POOL_MAX: '20',
  };
  const api = spawnRole('api', { ...common, FLIGHTDECK_PORT: String(port) });
  let worker = spawnRole('worker', common);
  const connection = await Connection.connect({ address: env.temporalAddress });
  try {
    const workspace = await new WorkspaceStore(fork()).create({ name: 'Pull' });
    const { key } = await new ApiKeyStore(fork()).create({ workspaceId: workspace.id, name: 'bench' });
    const call = workspaceApi(apiUrl, workspace.id, key);
    await waitForServices(apiUrl, connection, TASK_QUEUE);
    const ws = `/v1/workspaces/${workspace.id}`;
    const system = await call('POST', '/systems', { name: 'pull' });

    /** An agent, and a deployment it runs on `resources` resources of its own: queued jobs by the real flow. */
    const agentWithJobs = async (name: string, config: object, resources: number) => {
      const agentId = newId();
      await call('PUT', `/job-agents/${agentId}`, { name, type: 'http-pull', config });
      const environment = await call('POST', '/environments', {
        name,
        resourceSelector: `resource.metadata["lane"] == "${name}"`,
      });
      const deployment = await call('POST', '/deployments', {
        name,
        slug: name,
        resourceSelector: `resource.metadata["lane"] == "${name}"`,
        jobAgents: [{ ref: name }],
      });
      await call('PUT', `/systems/${system.id}/environments/${environment.id}`);
      await call('PUT', `/systems/${system.id}/deployments/${deployment.id}`);
      await inParallel(resources, 8, async (n) => {
        await call('PUT', `/resources/identifier/${name}-${n}`, {
          name: `${name}-${n}`,
          version: 'v1',
          kind: 'service',
          metadata: { lane: name },
        });
      });
      await call('POST', `/deployments/${deployment.id}/versions`, { tag: '1.0.0' });
      const ids = await waitForQueued(agentId, resources);
      return { agentId, ids };
    };
    const waitForQueued = async (agentId: string, count: number): Promise<string[]> => {
      let ids: string[] = [];
      await waitFor(
        async () => {
          ids = (
            await fork().execute<{ id: string }[]>(
              `SELECT id FROM job WHERE job_agent_id = ? AND status = 'queued'`,
              [agentId],
            )
          ).map((row) => row.id);
          return ids.length === count;
        },
        `${count} queued jobs`,
        600_000,
      );
      return ids;
    };

    // Claims and polls touch only the job rows, so their queues are copies of one real job
    // (distinct agent entries keep the one-active-job-per-entry index satisfied).
    const template = await agentWithJobs('template', {}, 1);
    let entry = 1_000;
    const seed = async (agentId: string, count: number): Promise<string[]> => {
      const rows = await fork().execute<{ id: string }[]>(
        `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id,
                          agent_type, agent_entry, status, job_agent_config, dispatch_context, created_at)
         SELECT gen_random_uuid(), workspace_id, release_id, deployment_id, environment_id, resource_id,
                ?::uuid, agent_type, ?::int + n, 'queued', job_agent_config, dispatch_context,
                created_at + n * interval '1 millisecond'
           FROM job, generate_series(1, ?::int) AS n
          WHERE id = ?
         RETURNING id`,
        [agentId, entry, count, template.ids[0]],
      );
      entry += count;
      return rows.map((row) => row.id);
    };
    const plainAgent = async (name: string) => {
      const agentId = newId();
      await call('PUT', `/job-agents/${agentId}`, { name, type: 'http-pull', config: {} });
      return agentId;
    };

    const claims = await measureClaims(apiUrl, ws, key, await plainAgent('race'), seed);
    const floor = await measureClaimFloor(fork, workspace.id, await plainAgent('floor'), seed);
    const polls = await measurePolls(apiUrl, ws, key, plainAgent, seed);

    // Reaper: real jobs on their own releases, claimed while no worker runs, their leases then set
    // to end together; the restarted worker starts every lease workflow before that instant.
    const leased = await agentWithJobs('leased', { leaseSeconds: 3600 }, LEASES);
    await worker.stop();
    const agent = new ApiClient({ apiUrl, apiKey: key });
    await inParallel(leased.ids.length, CLAIMERS, async (n) => {
      const res = await agent.request(
        'POST',
        `${ws}/job-agents/${leased.agentId}/jobs/${leased.ids[n]}/claim`,
      );
      if (res.status !== 200) throw new Error(`claim answered ${res.status}`);
    });
    agent.close();
    const [expiry] = await fork().execute<{ expires_at: Date }[]>(
      `UPDATE job_claim SET claim_expires_at = date_trunc('second', clock_timestamp()) + interval '40 seconds'
        WHERE job_agent_id = ? RETURNING claim_expires_at AS expires_at`,
      [leased.agentId],
    );
    const expiresAt = new Date(expiry!.expires_at);
    worker = spawnRole('worker', common);
    await waitForWorker(connection, TASK_QUEUE);
    await waitFor(
      async () =>
        (await fork().execute<{ n: number }[]>(`SELECT count(*)::int AS n FROM outbox`))[0]!.n === 0,
      'every lease workflow to start',
    );
    const startedAheadMs = expiresAt.getTime() - Date.now();
    await waitForQueued(leased.agentId, LEASES);
    const lags = (
      await fork().execute<{ lag_ms: number }[]>(
        `SELECT (extract(epoch FROM updated_at - ?::timestamptz) * 1000)::float8 AS lag_ms
           FROM job WHERE job_agent_id = ?`,
        [expiresAt, leased.agentId],
      )
    )
      .map((row) => Number(row.lag_ms))
      .sort((a, b) => a - b);

    const timerFloor = await measureTimerFloor(env.temporalAddress, connection);

    return {
      claims,
      floor,
      claimsVsFloor: round(claims.claimsPerSecond / floor.claimsPerSecond, 2),
      polls,
      reaper: {
        leases: lags.length,
        leaseWorkflowsReadyBeforeExpiryMs: Math.round(startedAheadMs),
        lagMs: {
          p50: round(percentile(lags, 50), 1),
          p99: round(percentile(lags, 99), 1),
          max: round(lags.at(-1) ?? 0, 1),
        },
        floor: timerFloor,
      },
      peakRssMb: { api: api.peakRssMb(), worker: worker.peakRssMb() },
    };
  } finally {
    await api.stop();
    await worker.stop();
    await connection.close();
    await env.close();
  }
}

type Seed = (agentId: string, count: number) => Promise<string[]>;

/** 32 agents poll and claim like the reference agent until the queue is empty. */
async function measureClaims(apiUrl: string, ws: string, key: string, agentId: string, seed: Seed) {
  await seed(agentId, CLAIM_JOBS);
  const client = new ApiClient({ apiUrl, apiKey: key });
  const latencies: number[] = [];
  let wins = 0;
  let conflicts = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLAIMERS }, async () => {
      for (;;) {
        const page = await client.request<{ items: { id: string }[] }>(
          'GET',
          `${ws}/job-agents/${agentId}/jobs?status=queued&limit=${CLAIM_PAGE}`,
        );
        const items = page.body.items;
        if (items.length === 0) return;
        // As the reference agent does: start at a random place in the page, so agents spread out.
        const start = Math.floor(Math.random() * items.length);
        for (let n = 0; n < items.length; n++) {
          const item = items[(n + start) % items.length]!;
          const sent = performance.now();
          const res = await client.request('POST', `${ws}/job-agents/${agentId}/jobs/${item.id}/claim`);
          latencies.push(performance.now() - sent);
          if (res.status === 200) {
            wins++;
            break;
          }
          if (res.status !== 409) throw new Error(`claim answered ${res.status}`);
          conflicts++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  client.close();
  latencies.sort((a, b) => a - b);
  return {
    agents: CLAIMERS,
    jobs: CLAIM_JOBS,
    claimed: wins,
    conflicts,
    seconds: round(seconds),
    claimsPerSecond: round(wins / seconds, 1),
    claimLatencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
  };
}

/** The same claim statement, straight from 32 database connections: what HTTP, auth and the rest add to. */
async function measureClaimFloor(
  fork: () => EntityManager,
  workspaceId: string,
  agentId: string,
  seed: Seed,
) {
  const ids = await seed(agentId, CLAIM_JOBS);
  const started = performance.now();
  await inParallel(ids.length, CLAIMERS, async (n) => {
    const outcome = await claimJob(fork(), {
      workspaceId,
      jobAgentId: agentId,
      jobId: ids[n]!,
      claimId: newId(),
      leaseSeconds: null,
    });
    if (outcome.outcome !== 'claimed') throw new Error(`the floor claim found ${outcome.outcome}`);
  });
  const seconds = (performance.now() - started) / 1000;
  return {
    connections: CLAIMERS,
    jobs: ids.length,
    seconds: round(seconds),
    claimsPerSecond: round(ids.length / seconds, 1),
  };
}

/** 100 agents, each with 100 queued jobs, poll their queues at the same time. */
async function measurePolls(
  apiUrl: string,
  ws: string,
  key: string,
  plainAgent: (name: string) => Promise<string>,
  seed: Seed,
) {
  const agents: string[] = [];
  for (let n = 0; n < POLL_AGENTS; n++) {
    const agentId = await plainAgent(`poller-${n}`);
    await seed(agentId, JOBS_PER_POLL_AGENT);
    agents.push(agentId);
  }
  const client = new ApiClient({ apiUrl, apiKey: key });
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    agents.map(async (agentId) => {
      for (let n = 0; n < POLLS_PER_AGENT; n++) {
        const sent = performance.now();
        const res = await client.request<{ items: unknown[] }>(
          'GET',
          `${ws}/job-agents/${agentId}/jobs?status=queued`,
        );
        latencies.push(performance.now() - sent);
        if (res.status !== 200 || res.body.items.length !== JOBS_PER_POLL_AGENT) {
          throw new Error(`poll answered ${res.status}`);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  client.close();
  latencies.sort((a, b) => a - b);
  return {
    agents: POLL_AGENTS,
    queuedJobs: POLL_AGENTS * JOBS_PER_POLL_AGENT,
    polls: latencies.length,
    pollsPerSecond: round(latencies.length / seconds, 1),
    pollLatencyMs: {
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies.at(-1) ?? 0),
    },
  };
}

/** Trivial workflows whose timers all end at one instant: how late Temporal itself completes them. */
async function measureTimerFloor(address: string, connection: Connection) {
  const taskQueue = 'bench-pull-floor';
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address }),
    taskQueue,
    workflowBundle: await bundleQuietly(require.resolve('./floor/workflows')),
  });
  const running = worker.run();
  try {
    const client = new Client({ connection });
    const untilMs = Math.ceil(Date.now() / 1000) * 1000 + 40_000;
    const ids = Array.from({ length: LEASES }, () => `timer-floor-${newId()}`);
    await inParallel(ids.length, 32, async (n) => {
      await client.workflow.start(timerFloorWorkflow, { taskQueue, workflowId: ids[n]!, args: [untilMs] });
    });
    const readyAheadMs = untilMs - Date.now();
    const lags: number[] = [];
    await inParallel(ids.length, 32, async (n) => {
      const handle = client.workflow.getHandle(ids[n]!);
      await handle.result();
      lags.push((await handle.describe()).closeTime!.getTime() - untilMs);
    });
    lags.sort((a, b) => a - b);
    return {
      workflows: lags.length,
      readyBeforeExpiryMs: readyAheadMs,
      lagMs: {
        p50: round(percentile(lags, 50), 1),
        p99: round(percentile(lags, 99), 1),
        max: round(lags.at(-1) ?? 0, 1),
      },
    };
  } finally {
    worker.shutdown();
    await running;
  }
}
