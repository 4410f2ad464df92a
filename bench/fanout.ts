import type { EntityManager } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { freePort } from '../cli/embedded/processes';
import { newId } from '../db/ids';
import { lockWorkspaceTargets, syncReleaseTargets } from '../db/releaseTargetSync';
import { SecretBox } from '../db/secrets';
import { ApiKeyStore } from '../db/stores/apiKeys';
import { WorkspaceStore } from '../db/stores/workspaces';
import { installTemporalRuntime } from '../worker/temporalRuntime';
import { floorWorkflow } from './floor/workflows';
import {
  benchEnvironment,
  bundleQuietly,
  inParallel,
  peakRssMb,
  prebuiltWorkflowBundle,
  round,
  spawnRole,
  waitFor,
  waitForServices,
  workspaceApi,
} from './environment';

/**
 * Version ready → every job queued, for 100, 1,000 and 10,000 release targets (BENCH_FANOUT_SIZES
 * overrides), with the API and the worker running as their own processes, as in production. For
 * each size, the floor: as many trivial workflows started and completed on the same Temporal
 * server, so the ratio shows what the orchestration itself costs.
 */
const SIZES = (process.env.BENCH_FANOUT_SIZES ?? '100,1000,10000').split(',').map(Number);
const TASK_QUEUE = 'bench-fanout';
const FLOOR_QUEUE = 'bench-fanout-floor';

export async function run(): Promise<Record<string, unknown>> {
  const env = await benchEnvironment('fanout');
  installTemporalRuntime(env.logger);
  const fork = () => env.orm.em.fork() as EntityManager;
  const secretKey = SecretBox.generateKey();
  const port = await freePort();
  // As in production, the worker loads a prebuilt bundle: bundling at start-up would dominate its peak memory.
  const bundlePath = await prebuiltWorkflowBundle();
  const common = {
    FLIGHTDECK_WORKFLOW_BUNDLE: bundlePath,
    DATABASE_URL: env.databaseUrl,
    TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    FLIGHTDECK_SECRET_KEY: secretKey,
    DATABASE_POOL_MAX: '20',
  };
  const api = spawnRole('api', { ...common, FLIGHTDECK_PORT: String(port) });
  const worker = spawnRole('worker', common);
  const connection = await Connection.connect({ address: env.temporalAddress });
  const client = new Client({ connection });
  const floorWorker = await Worker.create({
    connection: await NativeConnection.connect({ address: env.temporalAddress }),
    taskQueue: FLOOR_QUEUE,
    workflowBundle: await bundleQuietly(require.resolve('./floor/workflows')),
  });
  const floorRunning = floorWorker.run();
  try {
    const workspace = await new WorkspaceStore(fork()).create({ name: 'Fan-out' });
    const { key } = await new ApiKeyStore(fork()).create({ workspaceId: workspace.id, name: 'bench' });
    const apiUrl = `http://127.0.0.1:${port}`;
    const call = workspaceApi(apiUrl, workspace.id, key);
    await waitForServices(apiUrl, connection, TASK_QUEUE);
    await call('PUT', `/job-agents/${newId()}`, { name: 'puller', type: 'http-pull', config: {} });

    const runs = [];
    for (const size of SIZES) {
      const label = `fanout-${size}`;
      const system = await call('POST', '/systems', { name: label });
      const environment = await call('POST', '/environments', {
        name: label,
        resourceSelector: `resource.metadata["lane"] == "${label}"`,
      });
      const deployment = await call('POST', '/deployments', {
        name: label,
        slug: label,
        jobAgents: [{ ref: 'puller' }],
      });
      await call('PUT', `/systems/${system.id}/environments/${environment.id}`);
      await call('PUT', `/systems/${system.id}/deployments/${deployment.id}`);
      await fork().execute(
        `INSERT INTO resource (id, workspace_id, identifier, name, version, kind, metadata)
         SELECT (r->>'id')::uuid, ?::uuid, r->>'identifier', r->>'identifier', 'v1', 'service', r->'metadata'
           FROM jsonb_array_elements(?::jsonb) AS r`,
        [
          workspace.id,
          JSON.stringify(
            Array.from({ length: size }, (_, n) => ({
              id: newId(),
              identifier: `${label}-${n}`,
              metadata: { lane: label },
            })),
          ),
        ],
      );
      await fork().transactional(async (em) => {
        await lockWorkspaceTargets(em, workspace.id);
        await syncReleaseTargets(em, workspace.id, { deploymentIds: [deployment.id] });
      });
      await waitFor(
        async () => (await count('SELECT count(*)::int AS n FROM outbox', [])) === 0,
        'the target rollouts',
      );

      const started = performance.now();
      await call('POST', `/deployments/${deployment.id}/versions`, { tag: '1.0.0' });
      await waitFor(
        async () =>
          (await count(`SELECT count(*)::int AS n FROM job WHERE deployment_id = ? AND status = 'queued'`, [
            deployment.id,
          ])) === size,
        `${size} queued jobs`,
        1_800_000,
      );
      const seconds = (performance.now() - started) / 1000;

      const floorStarted = performance.now();
      await inParallel(size, 64, async (n) => {
        const handle = await client.workflow.start(floorWorkflow, {
          taskQueue: FLOOR_QUEUE,
          workflowId: `floor-${size}-${n}-${newId()}`,
        });
        await handle.result();
      });
      const floorSeconds = (performance.now() - floorStarted) / 1000;
      runs.push({
        targets: size,
        seconds: round(seconds),
        jobsPerSecond: round(size / seconds, 1),
        floor: { seconds: round(floorSeconds), workflowsPerSecond: round(size / floorSeconds, 1) },
        ratio: round(seconds / floorSeconds, 2),
      });
    }
    return {
      runs,
      peakRssMb: { api: api.peakRssMb(), worker: worker.peakRssMb(), benchProcess: peakRssMb() },
    };
  } finally {
    floorWorker.shutdown();
    await floorRunning;
    await api.stop();
    await worker.stop();
    await connection.close();
    await env.close();
  }

  async function count(sql: string, params: unknown[]): Promise<number> {
    const [row] = await fork().execute<{ n: number }[]>(sql, params);
    return row?.n ?? 0;
  }
}
