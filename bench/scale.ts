import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { Pool } from 'pg';
import { newId } from '../db/ids';
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
  type StackRole,
} from './environment';

/**
 * A version on BENCH_SCALE_TARGETS (100,000) release targets, on the stack users run (`flightdeck
 * start` from dist/), its resources sent as an inventory sync sends them: BENCH_SCALE_SETS (100)
 * provider sets. Measured from the version request:
 * - every job queued (the fan-out is set-based; the releases' workflows trail it);
 * - while those workflows start and the task queue drains, 20 s into the fan-out: another
 *   deployment's version to its first queued job, and an approval to the job of the release it
 *   wakes (a deployment held by an approval policy) — what every other team sees meanwhile;
 * - the time until the outbox and the workflow task queue are empty (or, after
 *   BENCH_SCALE_DRAIN_WAIT_MS, what is left of them), peak memory of each process, and the size of
 *   Temporal's SQLite file.
 */
const TARGETS = Number(process.env.BENCH_SCALE_TARGETS ?? 100_000);
const SETS = Number(process.env.BENCH_SCALE_SETS ?? 100);
/** When, into the fan-out, the other deployments act. */
const PROBE_AFTER_MS = Number(process.env.BENCH_SCALE_PROBE_AFTER_MS ?? 20_000);
/** How long to wait for the trailing work to drain; past it, what is left is reported instead. */
const DRAIN_WAIT_MS = Number(process.env.BENCH_SCALE_DRAIN_WAIT_MS ?? 7_200_000);
const TASK_QUEUE = 'flightdeck';

export async function run(): Promise<Record<string, unknown>> {
  const stack = await startFlightdeckStack();
  const pool = new Pool({ connectionString: stack.databaseUrl, max: 4 });
  const query: Query = async (sql, params = []) => (await pool.query(sql, params)).rows;
  const connection = await Connection.connect({ address: stack.temporalAddress });
  try {
    const call = workspaceApi(stack.apiUrl, stack.workspaceId, stack.apiKey);
    await waitFor(async () => (await fetch(`${stack.apiUrl}/readyz`)).ok, 'the API to be ready');
    // Each lane in a system of its own: a deployment targets only its own lane's environment.
    const lane = async (name: string, selector: string) => {
      const system = await call('POST', '/systems', { name });
      const agentId = newId();
      await call('PUT', `/job-agents/${agentId}`, { name, type: 'http-pull', config: {} });
      const environment = await call('POST', '/environments', { name, resourceSelector: selector });
      const deployment = await call('POST', '/deployments', { name, slug: name, jobAgents: [{ ref: name }] });
      await call('PUT', `/systems/${system.id}/environments/${environment.id}`);
      await call('PUT', `/systems/${system.id}/deployments/${deployment.id}`);
      return { deploymentId: deployment.id as string, agentId };
    };

    // The inventory: 100 provider sets of 1,000 resources.
    const big = await lane('fleet', 'resource.metadata["lane"] == "fleet"');
    const perSet = Math.ceil(TARGETS / SETS);
    const setsStarted = performance.now();
    for (let set = 0; set < SETS; set++) {
      const provider = await call('PUT', '/resource-providers', { name: `scanner-${set}` });
      const resources = Array.from({ length: Math.min(perSet, TARGETS - set * perSet) }, (_, n) => ({
        identifier: `fleet-${set}-${n}`,
        name: `fleet-${set}-${n}`,
        version: 'v1',
        kind: 'service',
        config: {},
        metadata: { lane: 'fleet' },
      }));
      await call('PUT', `/resource-providers/${provider.id}/set`, { resources });
    }
    const setsSeconds = (performance.now() - setsStarted) / 1000;
    await waitFor(
      async () =>
        (await count(query, 'SELECT count(*)::int AS n FROM release_target WHERE deployment_id = $1', [
          big.deploymentId,
        ])) === TARGETS,
      `${TARGETS} release targets`,
      1_800_000,
    );

    // The others: a deployment of its own, and one held by an approval, its release waiting now.
    const other = await lane('other', 'resource.metadata["lane"] == "other"');
    const gated = await lane('gated', 'resource.metadata["lane"] == "gated"');
    for (const name of ['other', 'gated']) {
      await call('PUT', `/resources/identifier/${name}-0`, {
        name: `${name}-0`,
        version: 'v1',
        kind: 'service',
        metadata: { lane: name },
      });
    }
    await call('POST', '/policies', {
      name: 'gate',
      selector: 'deployment.slug == "gated"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    await waitFor(
      async () =>
        (await count(
          query,
          'SELECT count(*)::int AS n FROM release_target WHERE deployment_id = ANY($1::uuid[])',
          [`{${other.deploymentId},${gated.deploymentId}}`],
        )) === 2,
      'the targets of the other deployments',
    );
    const gatedVersion = await call('POST', `/deployments/${gated.deploymentId}/versions`, { tag: '1.0.0' });
    await waitFor(
      async () =>
        (await count(
          query,
          `SELECT count(*)::int AS n FROM release WHERE version_id = $1 AND phase = 'pending'`,
          [gatedVersion.id],
        )) === 1,
      'the gated release waiting for its approval',
    );
    const sqliteBefore = sqliteBytes(stack);
    const peakBefore = stack.memoryPeak();

    // The fan-out.
    const cpuBefore = stack.cpuMs();
    const sent = performance.now();
    const version = await call('POST', `/deployments/${big.deploymentId}/versions`, { tag: '1.0.0' });
    const anyQueued = async (agentId: string) =>
      (await query(`SELECT 1 FROM job WHERE job_agent_id = $1 AND status = 'queued' LIMIT 1`, [agentId]))
        .length > 0;
    const queuedFor = (agentId: string) => queuedJobs(query, agentId);

    const probes = (async () => {
      await sleep(PROBE_AFTER_MS);
      const versionSent = performance.now();
      await call('POST', `/deployments/${other.deploymentId}/versions`, { tag: '1.0.0' });
      const otherVersion = waitFor(
        async () => (await queuedFor(other.agentId)) === 1,
        "the other deployment's job",
        600_000,
      ).then(() => (performance.now() - versionSent) / 1000);
      const [gatedRelease] = await query<{ id: string }>('SELECT id FROM release WHERE version_id = $1', [
        gatedVersion.id,
      ]);
      const approvalSent = performance.now();
      await call('POST', `/releases/${gatedRelease!.id}/approve`, {});
      const approval = waitFor(
        async () => (await queuedFor(gated.agentId)) === 1,
        "the approved release's job",
        600_000,
      ).then(() => (performance.now() - approvalSent) / 1000);
      return {
        otherVersionToFirstJobSeconds: round(await otherVersion),
        approvalToJobSeconds: round(await approval),
      };
    })();

    // Polled every 100 ms: cheap probes until the rollout reports its last batch, then one count
    // (counting 100,000 queued jobs costs the database about 25 ms, a quarter of a core at this rate).
    let firstQueued: number | undefined;
    await waitFor(
      async () => {
        firstQueued ??= (await anyQueued(big.agentId)) ? (performance.now() - sent) / 1000 : undefined;
        const [progress] = await query<{ rollout_status: string }>(
          'SELECT rollout_status FROM deployment_version WHERE id = $1',
          [version.id],
        );
        return progress?.rollout_status === 'completed' && (await queuedFor(big.agentId)) === TARGETS;
      },
      `${TARGETS} queued jobs`,
      1_800_000,
    );
    const allQueuedSeconds = (performance.now() - sent) / 1000;
    const cpuAfter = stack.cpuMs();
    const meanwhile = await probes;

    // The trailing work: every release workflow started, the outbox and the task queue empty.
    let backlog = Infinity;
    let outbox = Infinity;
    const drained = await waitFor(
      async () => {
        outbox = await count(query, 'SELECT count(*)::int AS n FROM outbox');
        backlog = await workflowBacklog(connection, TASK_QUEUE);
        return outbox === 0 && backlog === 0;
      },
      'an empty outbox and workflow task queue',
      DRAIN_WAIT_MS,
    ).then(
      () => true,
      () => false,
    );
    const drainedSeconds = (performance.now() - sent) / 1000;
    const releasesStarted = await count(
      query,
      `SELECT count(*)::int AS n FROM release r JOIN deployment_version v ON v.id = r.version_id
        WHERE v.deployment_id = $1`,
      [big.deploymentId],
    );
    const peak = stack.memoryPeak();
    return {
      stack:
        'flightdeck start from dist/: embedded PostgreSQL, embedded Temporal (SQLite), API and worker processes',
      targets: TARGETS,
      providerSets: { sets: SETS, seconds: round(setsSeconds, 1) },
      fanout: {
        firstQueuedSeconds: round(firstQueued ?? allQueuedSeconds),
        allQueuedSeconds: round(allQueuedSeconds),
        ...(drained
          ? { queueDrainedSeconds: round(drainedSeconds) }
          : {
              notDrainedAfterSeconds: round(drainedSeconds),
              outboxLeft: outbox,
              workflowTasksLeft: backlog,
            }),
        releases: releasesStarted,
      },
      meanwhile,
      coresDuringFanout: Object.fromEntries(
        (Object.keys(cpuAfter) as StackRole[]).map((role) => [
          role,
          round((cpuAfter[role] - cpuBefore[role]) / 1000 / allQueuedSeconds),
        ]),
      ),
      peakMemoryMb: Object.fromEntries(
        (Object.keys(peak) as StackRole[]).map((role) => [
          role,
          { beforeFanout: peakBefore[role], peak: peak[role] },
        ]),
      ),
      temporalSqliteMb: {
        beforeFanout: round(sqliteBefore / 2 ** 20),
        after: round(sqliteBytes(stack) / 2 ** 20),
      },
    };
  } finally {
    await connection.close();
    await pool.end();
    await stack.stop();
  }
}
