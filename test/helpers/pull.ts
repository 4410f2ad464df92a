import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { listen, type ApiServer } from '../../api/server';
import { ApiKeyStore } from '../../application/apiKeys';
import { recordsApi, type Job } from './orchestration';
import type { TestStack } from './stack';

/** Builders for pull-agent tests: an http-pull agent with queued jobs, agent keys, a real listening server. */

export interface PullFixture {
  agentId: string;
  deploymentId: string;
  /** The agent's jobs, queued by the release workflows. */
  jobs: Job[];
}

/**
 * An `http-pull` agent named `name` and `resources` resources whose deployment it runs: one version
 * makes one queued job per resource, through the real release flow.
 */
export async function pullFixture(
  stack: TestStack,
  name: string,
  options: { config?: object; resources?: number; variables?: Record<string, string> } = {},
): Promise<PullFixture> {
  const api = recordsApi(stack);
  const resources = options.resources ?? 1;
  const agentId = await api.agent(name, 'http-pull', options.config ?? {});
  const system = await api.system(`Pull ${name}`);
  await api.environment(`env-${name}`, `resource.metadata["pool"] == "${name}"`, system);
  const deploymentId = await api.deployment(`svc-${name}`, system, {
    jobAgents: [{ ref: name, config: { image: `${name}:1.0.0` } }],
  });
  for (const [key, value] of Object.entries(options.variables ?? {})) {
    await api.send(
      'put',
      `/deployments/${deploymentId}/variables/${randomUUID()}`,
      { key, defaultValue: value },
      [202],
    );
  }
  for (let n = 0; n < resources; n++) await api.resource(`${name}-node-${n}`, 'service', { pool: name });
  await api.version(deploymentId, '1.0.0');
  const jobs = await api.jobsSettleAt(
    resources,
    `&status=queued&jobAgentId=${agentId}`,
    `${resources} queued jobs of ${name}`,
  );
  return { agentId, deploymentId, jobs };
}

/** An API key that may act only for one job agent. */
export async function agentKey(stack: TestStack, jobAgentId: string): Promise<string> {
  const em = stack.orm.em.fork() as EntityManager;
  return (await new ApiKeyStore(em).create({ workspaceId: stack.workspaceId, name: 'agent', jobAgentId }))
    .key;
}

/** The stack's app on a real socket, for tests that need true concurrency or a non-loopback peer. */
export function serveStack(
  stack: TestStack,
  host = '127.0.0.1',
  tls?: { cert: Buffer; key: Buffer },
): Promise<ApiServer> {
  return listen(stack.app.app, host, 0, tls);
}
