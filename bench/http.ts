import { findOpa, OpaEngine } from '../cli/opa';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { createApp } from '../api/app';
import { storeFactory } from '../application';
import { listen } from '../api/server';
import { pingDatabase } from '../db/database';
import { SecretBox } from '../db/secrets';
import { ApiKeyStore } from '../application/apiKeys';
import { WorkspaceStore } from '../application/workspaces';
import { startWorkerRuntime } from '../worker/runtime';
import { installTemporalRuntime } from '../worker/temporalRuntime';
import { benchEnvironment, peakRssMb, percentile, round } from './environment';

/**
 * The HTTP path every request takes (auth by key hash, scope check, MikroORM read, problem and
 * metrics middleware) over a real socket, and the round trip of the orchestration wiring: a
 * version created ready until its rollout workflow has written its result.
 */
export async function run(): Promise<Record<string, unknown>> {
  const env = await benchEnvironment('http');
  await installTemporalRuntime(env.logger);
  const em = env.orm.em.fork() as EntityManager;
  const workspace = await new WorkspaceStore(em).create({ name: 'Bench' });
  const { key } = await new ApiKeyStore(em).create({ workspaceId: workspace.id, name: 'bench' });
  const secrets = SecretBox.fromString(SecretBox.generateKey());
  const { app } = createApp({
    stores: storeFactory(env.orm, { secrets, rego: new OpaEngine(findOpa()) }),
    orm: env.orm,
    logger: env.logger,
    bodyLimit: '1mb',
    version: 'bench',
    transport: { trustedProxies: [], allowInsecurePull: false },
    readiness: { postgres: () => pingDatabase(env.orm) },
  });
  const server = await listen(app, '127.0.0.1', 0);
  const worker = await startWorkerRuntime({
    orm: env.orm,
    secrets,
    rego: new OpaEngine(findOpa()),
    databaseUrl: env.databaseUrl,
    temporal: { address: env.temporalAddress, namespace: 'default', taskQueue: 'bench-http' },
    logger: env.logger,
    skipSearchAttributeRegistration: true,
  });
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  try {
    const concurrency = 32;
    const perClient = 250;
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = 0; i < perClient; i++) {
          const t0 = performance.now();
          const res = await fetch(`${server.url}/v1/workspaces/${workspace.id}`, { headers });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);

    const deployment = await fetch(`${server.url}/v1/workspaces/${workspace.id}/deployments`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Bench', slug: 'bench' }),
    }).then((res) => res.json() as Promise<{ id: string }>);
    const rollouts: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      const version = await fetch(
        `${server.url}/v1/workspaces/${workspace.id}/deployments/${deployment.id}/versions`,
        {
          method: 'POST',
          headers,
          body: JSON.stringify({ tag: `1.0.${i}` }),
        },
      ).then((res) => res.json() as Promise<{ id: string }>);
      for (;;) {
        const current = await fetch(
          `${server.url}/v1/workspaces/${workspace.id}/deployment-versions/${version.id}`,
          {
            headers,
          },
        ).then((res) => res.json() as Promise<{ rollout: { status: string } }>);
        if (current.rollout.status === 'completed') break;
        await sleep(2);
      }
      rollouts.push(performance.now() - t0);
    }
    rollouts.sort((a, b) => a - b);

    return {
      authenticatedGet: {
        requests: latencies.length,
        concurrency,
        requestsPerSecond: round(latencies.length / elapsed, 0),
        p50Ms: round(percentile(latencies, 50)),
        p99Ms: round(percentile(latencies, 99)),
      },
      versionReadyToRolloutCompleted: {
        versions: rollouts.length,
        p50Ms: round(percentile(rollouts, 50)),
        p99Ms: round(percentile(rollouts, 99)),
      },
      peakRssMb: peakRssMb(),
    };
  } finally {
    await worker.stop();
    await server.close();
    await env.close();
  }
}
