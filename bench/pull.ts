import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'pg';
import { ApiClient } from '../cli/apiClient';
import { newId } from '../db/ids';
import {
  percentile,
  round,
  startFlightdeckStack,
  waitFor,
  workspaceApi,
  type FlightdeckStack,
  type StackRole,
  count,
  type Query,
} from './environment';
import {
  claimAll,
  cpuProfile,
  fanOut,
  laneBuilder,
  reaperLag,
  type Claimed,
  type Call,
  type Figures,
  summarize,
  type Lane,
  type LaneDeployment,
} from './lanes';

/**
 * Pull delivery on the stack users run: `flightdeck start` from dist/ (PostgreSQL and Temporal
 * embedded, the API and the worker as its child processes, the worker and Temporal at a lower
 * priority). Every figure is taken BENCH_PULL_REPEATS times (3), each time on records of its own,
 * and printed as the median with every run's value:
 * - resource PUTs per second from BENCH_PULL_WRITERS (8) concurrent writers, building a lane of
 *   BENCH_PULL_TARGETS (1,000) resources;
 * - claims: a version fans out to that lane's targets; as soon as every job is queued, while the
 *   worker still starts their release workflows, BENCH_PULL_AGENTS (16) agents poll, claim,
 *   heartbeat and report each job as the reference agent does (claims per second, p50/p99 of
 *   claims and heartbeats), and every job handed out is counted against the jobs completed;
 * - polls: an agent with 1,000 and with 10,000 jobs queued (BENCH_PULL_QUEUES), polled by the
 *   agents 20 times each;
 * - reaper lag: 50 and 1,000 leases (BENCH_PULL_LEASES) of BENCH_PULL_LEASE_SECONDS (20) taken
 *   together by 32 claimers and left to expire: how long after its own expiry each job was back in
 *   the queue, by the database's clock;
 * - /healthz latency while a version fans out to BENCH_PULL_FANOUT_TARGETS (10,000) targets;
 * - memory of each process: idle after start, at its peak, idle again after the load (once the
 *   outbox has drained, or BENCH_PULL_IDLE_WAIT_MS (15 min) have passed: how long it took and what
 *   was left are printed), and then what the API's and the worker's V8 heaps hold; `start`'s own
 *   processes together, idle at start and after the load, as resident sets and proportional sets;
 * - where the time goes: for the PUTs, the claims and the polls, the CPU each process of the stack
 *   (and the benchmark's own clients) spent per operation, and how many of the machine's cores the
 *   phase kept busy.
 */
const REPEATS = Number(process.env.BENCH_PULL_REPEATS ?? 3);
const AGENTS = Number(process.env.BENCH_PULL_AGENTS ?? 16);
const TARGETS = Number(process.env.BENCH_PULL_TARGETS ?? 1_000);
const WRITERS = Number(process.env.BENCH_PULL_WRITERS ?? 8);
const QUEUES = sizes(process.env.BENCH_PULL_QUEUES ?? '1000,10000');
const LEASES = sizes(process.env.BENCH_PULL_LEASES ?? '50,1000');
const LEASE_SECONDS = Number(process.env.BENCH_PULL_LEASE_SECONDS ?? 20);
const FANOUT_TARGETS = Number(process.env.BENCH_PULL_FANOUT_TARGETS ?? 10_000);
/** How long the trailing work of the runs may take to drain before idle memory is read. */
const IDLE_WAIT_MS = Number(process.env.BENCH_PULL_IDLE_WAIT_MS ?? 900_000);
const POLLS_PER_AGENT = 20;
/** As many as the reference agent asks for. */
const POLL_LIMIT = 32;
const LEASE_CLAIMERS = 32;
/** How long the agents may take over a lane's jobs before the run counts them lost. */
const CLAIMS_TIMEOUT_MS = 600_000;

function sizes(list: string): number[] {
  return list.split(',').map((size) => Number(size.trim()));
}

export async function run(): Promise<Record<string, unknown>> {
  const stack = await startFlightdeckStack();
  const pool = new Pool({ connectionString: stack.databaseUrl, max: 4 });
  const query: Query = async (sql, params = []) => (await pool.query(sql, params)).rows;
  try {
    const call = workspaceApi(stack.apiUrl, stack.workspaceId, stack.apiKey);
    await waitFor(async () => (await fetch(`${stack.apiUrl}/readyz`)).ok, 'the API to be ready');
    await sleep(5_000);
    const idleAtStart = stack.memoryNow();
    const ownIdleAtStart = stack.ownMemoryNow();
    const system = await call('POST', '/systems', { name: 'pull' });
    const lanes = laneBuilder(stack, call, query, system.id, WRITERS);

    // The large fan-out's lane: its resources once, a deployment per run.
    const fanoutLane = await lanes.create('fanout', FANOUT_TARGETS, REPEATS);
    const runs: Figures[] = [];
    for (let n = 0; n < REPEATS; n++) {
      const lane = await lanes.create(`run-${n}`, Math.max(TARGETS, ...LEASES), 1, [
        { name: 'claims', size: TARGETS, leaseSeconds: 300 },
        ...LEASES.map((size) => ({ name: `leases-${size}`, size, leaseSeconds: LEASE_SECONDS })),
      ]);
      const claims = await measureClaims(stack, call, query, lane.deployment('claims'));
      runs.push({
        resourcePuts: lane.puts,
        claims: claims.figures,
        polls: await measurePolls(stack, call, query, claims.templateJobId),
        reaper: await measureReaper(stack, call, query, lane),
        healthzDuringFanout: await measureHealthz(stack, call, query, fanoutLane.deployments[n]!),
      });
      // A long run's figures are not lost if a later step fails.
      process.stderr.write(`[bench pull] run ${n + 1} of ${REPEATS}: ${JSON.stringify(runs.at(-1))}\n`);
    }
    // Idle: the trailing work relayed (or as much as IDLE_WAIT_MS allows: what is left is reported),
    // and half a minute for caches and heaps to settle.
    const drainStarted = performance.now();
    const outboxLeft = () => count(query, 'SELECT count(*)::int AS n FROM outbox');
    while ((await outboxLeft()) > 0 && performance.now() - drainStarted < IDLE_WAIT_MS) await sleep(1_000);
    const drain = {
      seconds: round((performance.now() - drainStarted) / 1000, 1),
      outboxLeft: await outboxLeft(),
    };
    await sleep(30_000);
    const idleAfterLoad = stack.memoryNow();
    const ownIdleAfterLoad = stack.ownMemoryNow();
    const heapsAfterLoad = await v8HeapsMb(stack.metricsUrl);
    const peak = stack.memoryPeak();
    return {
      stack:
        'flightdeck start from dist/: embedded PostgreSQL, embedded Temporal (SQLite), API and worker processes',
      repeats: REPEATS,
      sizes: {
        agents: AGENTS,
        targets: TARGETS,
        writers: WRITERS,
        queues: QUEUES,
        leases: LEASES,
        leaseSeconds: LEASE_SECONDS,
        fanoutTargets: FANOUT_TARGETS,
      },
      ...summarize(runs),
      drainAfterLoad: drain,
      memoryMb: Object.fromEntries(
        (Object.keys(peak) as StackRole[]).map((role) => [
          role,
          { idleAtStart: idleAtStart[role], peak: peak[role], idleAfterLoad: idleAfterLoad[role] },
        ]),
      ),
      ownProcessesMb: { idleAtStart: ownIdleAtStart, idleAfterLoad: ownIdleAfterLoad },
      v8HeapMbIdleAfterLoad: heapsAfterLoad,
    };
  } finally {
    await pool.end();
    await stack.stop();
  }
}

/**
 * What the Node processes' main V8 heaps hold (used of total, MiB), from /metrics: the rest of their
 * RSS is code, the allocator's, Temporal core's and the worker's workflow threads' heaps.
 */
async function v8HeapsMb(metricsUrl: string) {
  const text = await (await fetch(metricsUrl)).text();
  const mb = (name: string) => {
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
    return line === undefined ? null : round(Number(line.split(' ')[1]) / 2 ** 20, 1);
  };
  const heapOf = (prefix: string) => ({
    used: mb(`${prefix}nodejs_heap_size_used_bytes`),
    total: mb(`${prefix}nodejs_heap_size_total_bytes`),
    external: mb(`${prefix}nodejs_external_memory_bytes`),
  });
  return { api: heapOf('flightdeck_'), worker: heapOf('flightdeck_worker_') };
}

/**
 * Right after a fan-out queued every job of the lane, the agents work through them as the
 * reference agent does: poll, claim one (from a random place in the page), heartbeat, report it
 * successful, poll again.
 */
async function measureClaims(stack: FlightdeckStack, call: Call, query: Query, deployment: LaneDeployment) {
  const fanoutSeconds = await fanOut(call, query, deployment, '1.0.0');
  const outboxAtStart = await count(query, 'SELECT count(*)::int AS n FROM outbox');
  const client = new ApiClient({ apiUrl: stack.apiUrl, apiKey: stack.apiKey });
  const ws = `/v1/workspaces/${stack.workspaceId}`;
  const claimLatencies: number[] = [];
  const heartbeatLatencies: number[] = [];
  const handedOut = new Map<string, number>();
  let completed = 0;
  let conflicts = 0;
  let firstClaim = 0;
  let lastClaim = 0;
  const deadline = Date.now() + CLAIMS_TIMEOUT_MS;
  const cpu = cpuProfile(stack);
  const timed = async <T>(latencies: number[], work: () => Promise<T>): Promise<T> => {
    const sent = performance.now();
    const result = await work();
    latencies.push(performance.now() - sent);
    return result;
  };
  await Promise.all(
    Array.from({ length: AGENTS }, async () => {
      while (completed < deployment.size) {
        if (Date.now() > deadline)
          throw new Error(`claims: ${completed} of ${deployment.size} completed in time`);
        const page = await client.request<{ items: { id: string }[] }>(
          'GET',
          `${ws}/job-agents/${deployment.agentId}/jobs?status=queued&limit=${POLL_LIMIT}`,
        );
        if (page.status !== 200) throw new Error(`poll answered ${page.status}`);
        const items = page.body.items;
        if (items.length === 0) {
          await sleep(50);
          continue;
        }
        const first = Math.floor(Math.random() * items.length);
        for (let n = 0; n < items.length; n++) {
          const item = items[(n + first) % items.length]!;
          const claim = await timed(claimLatencies, () =>
            client.request<Claimed>('POST', `${ws}/job-agents/${deployment.agentId}/jobs/${item.id}/claim`),
          );
          if (claim.status === 409 || claim.status === 404) {
            conflicts++;
            continue;
          }
          if (claim.status !== 200) throw new Error(`claim answered ${claim.status}`);
          lastClaim = performance.now();
          firstClaim ||= lastClaim;
          handedOut.set(item.id, (handedOut.get(item.id) ?? 0) + 1);
          const identity = { claim_id: claim.body.claim_id };
          const beat = await timed(heartbeatLatencies, () =>
            client.request('POST', `${ws}/jobs/${item.id}/heartbeat`, identity),
          );
          if (beat.status !== 200) throw new Error(`heartbeat answered ${beat.status}`);
          const report = await client.request('PUT', `${ws}/jobs/${item.id}/status`, {
            ...identity,
            status: 'successful',
            message: 'bench',
          });
          if (report.status !== 202) throw new Error(`report answered ${report.status}`);
          completed++;
          break;
        }
      }
    }),
  );
  client.close();
  const cpuPerJob = cpu.perOperation(deployment.size);
  const successful = await count(
    query,
    `SELECT count(*)::int AS n FROM job WHERE job_agent_id = $1 AND status = 'successful'`,
    [deployment.agentId],
  );
  const handedOutTwice = [...handedOut.values()].filter((times) => times > 1).length;
  if (handedOut.size !== deployment.size || handedOutTwice > 0 || successful !== deployment.size) {
    throw new Error(
      `claims: ${handedOut.size} jobs handed out (${handedOutTwice} twice), ${successful} successful, of ${deployment.size}`,
    );
  }
  claimLatencies.sort((a, b) => a - b);
  heartbeatLatencies.sort((a, b) => a - b);
  const [template] = await query<{ id: string }>('SELECT id FROM job WHERE job_agent_id = $1 LIMIT 1', [
    deployment.agentId,
  ]);
  return {
    templateJobId: template!.id,
    figures: {
      fanoutSeconds: round(fanoutSeconds),
      outboxBacklogAtStart: outboxAtStart,
      claimsPerSecond: round(deployment.size / ((lastClaim - firstClaim) / 1000 || 1), 1),
      claimLatencyMs: {
        p50: round(percentile(claimLatencies, 50)),
        p99: round(percentile(claimLatencies, 99)),
      },
      heartbeatLatencyMs: {
        p50: round(percentile(heartbeatLatencies, 50)),
        p99: round(percentile(heartbeatLatencies, 99)),
      },
      cpuMsPerJob: cpuPerJob,
      conflicts,
      handedOut: handedOut.size,
      handedOutTwice,
      completed,
    },
  };
}

/**
 * An agent with `size` jobs queued (copies of a real job, each on an agent entry of its own so the
 * one-active-job-per-entry index holds), polled by the agents at once.
 */
async function measurePolls(stack: FlightdeckStack, call: Call, query: Query, templateJobId: string) {
  const figures: Figures = {};
  let entry = 1_000;
  for (const size of QUEUES) {
    const agentId = newId();
    await call('PUT', `/job-agents/${agentId}`, { name: `poll-${agentId}`, type: 'http-pull', config: {} });
    await query(
      `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id,
                        agent_type, agent_entry, status, job_agent_config, dispatch_context, created_at)
       SELECT gen_random_uuid(), workspace_id, release_id, deployment_id, environment_id, resource_id,
              $1::uuid, agent_type, $2::int + n, 'queued', job_agent_config, dispatch_context,
              created_at + n * interval '1 millisecond'
         FROM job, generate_series(1, $3::int) AS n
        WHERE id = $4`,
      [agentId, entry, size, templateJobId],
    );
    entry += size;
    const client = new ApiClient({ apiUrl: stack.apiUrl, apiKey: stack.apiKey });
    const latencies: number[] = [];
    const cpu = cpuProfile(stack);
    await Promise.all(
      Array.from({ length: AGENTS }, async () => {
        for (let n = 0; n < POLLS_PER_AGENT; n++) {
          const sent = performance.now();
          const res = await client.request<{ items: unknown[] }>(
            'GET',
            `/v1/workspaces/${stack.workspaceId}/job-agents/${agentId}/jobs?status=queued&limit=${POLL_LIMIT}`,
          );
          latencies.push(performance.now() - sent);
          if (res.status !== 200 || res.body.items.length !== Math.min(POLL_LIMIT, size)) {
            throw new Error(`poll answered ${res.status}`);
          }
        }
      }),
    );
    client.close();
    const cpuPerPoll = cpu.perOperation(AGENTS * POLLS_PER_AGENT);
    // The next runs' database as this one's: without these copies.
    await query('DELETE FROM job WHERE job_agent_id = $1', [agentId]);
    latencies.sort((a, b) => a - b);
    figures[`queued${size}`] = {
      p50Ms: round(percentile(latencies, 50)),
      p99Ms: round(percentile(latencies, 99)),
      cpuMsPerPoll: cpuPerPoll,
    };
  }
  return figures;
}

/**
 * For each size, a fan-out queues that many jobs of an agent with short leases; claimers take them
 * all at once and never heartbeat. Lag: the job's return to the queue (its `updated_at`) after its
 * own claim's expiry, both by the database's clock; the spread says how close together they expired.
 */
async function measureReaper(stack: FlightdeckStack, call: Call, query: Query, lane: Lane) {
  const figures: Figures = {};
  for (const size of LEASES) {
    const deployment = lane.deployment(`leases-${size}`);
    await fanOut(call, query, deployment, '1.0.0');
    const jobs = await query<{ id: string }>(
      `SELECT id FROM job WHERE job_agent_id = $1 AND status = 'queued'`,
      [deployment.agentId],
    );
    const expiries = await claimAll(stack, deployment.agentId, jobs, LEASE_CLAIMERS);
    figures[`leases${size}`] = await reaperLag(
      query,
      deployment.agentId,
      expiries,
      (LEASE_SECONDS + 600) * 1000,
    );
  }
  return figures;
}

/** /healthz, one request at a time, from a version's request until its fan-out queued every job. */
async function measureHealthz(stack: FlightdeckStack, call: Call, query: Query, deployment: LaneDeployment) {
  const latencies: number[] = [];
  let fanningOut = true;
  const probing = (async () => {
    while (fanningOut) {
      const sent = performance.now();
      const res = await fetch(`${stack.apiUrl}/healthz`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
      latencies.push(performance.now() - sent);
      await sleep(10);
    }
  })();
  let fanoutSeconds: number;
  try {
    fanoutSeconds = await fanOut(call, query, deployment, '1.0.0');
  } finally {
    fanningOut = false;
    await probing;
  }
  latencies.sort((a, b) => a - b);
  return {
    fanoutSeconds: round(fanoutSeconds),
    requests: latencies.length,
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    maxMs: round(latencies.at(-1) ?? 0),
  };
}
