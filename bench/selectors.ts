import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids';
import { lockWorkspaceTargets, syncReleaseTargets } from '../engine/targets';
import { SecretBox } from '../db/secrets';
import { DeploymentStore } from '../application/deployments';
import { EnvironmentStore } from '../application/environments';
import { ResourceStore } from '../application/resources';
import { SystemStore } from '../application/systems';
import { WorkspaceStore } from '../application/workspaces';
import { benchEnvironment, peakRssMb, round } from './environment';

/**
 * Release-target maintenance at scale: 10,000 resources, 20 environments and 20 deployments in one
 * system. Each environment selects one value of `metadata.env`, each deployment one of 5 kinds, so
 * every resource has 4 targets (40,000 in all).
 */
const RESOURCES = 10_000;
const ENVIRONMENTS = 20;
const DEPLOYMENTS = 20;
const KINDS = 5;
const UPSERTS = Number(process.env.BENCH_UPSERTS ?? 2_000);

export async function run(): Promise<Record<string, unknown>> {
  const env = await benchEnvironment('selectors');
  const secrets = SecretBox.fromString(SecretBox.generateKey());
  const fork = () => env.orm.em.fork() as EntityManager;
  try {
    const workspaceId = (await new WorkspaceStore(fork()).create({ name: 'Bench' })).id;
    const systems = new SystemStore(fork());
    const systemId = (await systems.create(workspaceId, { name: 'Fleet' })).id;
    for (let i = 0; i < ENVIRONMENTS; i++) {
      const environment = await new EnvironmentStore(fork()).create(workspaceId, {
        name: `env-${i}`,
        resourceSelector: `resource.metadata["env"] == "e${i}"`,
      });
      await systems.link(workspaceId, systemId, 'environment', environment.id);
    }
    for (let i = 0; i < DEPLOYMENTS; i++) {
      const deployment = await new DeploymentStore(fork(), secrets).create(workspaceId, {
        name: `service-${i}`,
        slug: `service-${i}`,
        resourceSelector: `resource.kind == "k${i % KINDS}" && resource.identifier.startsWith("node-")`,
      });
      await systems.link(workspaceId, systemId, 'deployment', deployment.id);
    }

    // Resources go in with one statement; their targets then come from the full recompute below.
    await fork().execute(
      `INSERT INTO resource (id, workspace_id, identifier, name, version, kind, metadata)
       SELECT (data->>'id')::uuid, ?::uuid, data->>'identifier', data->>'identifier', 'v1', data->>'kind', data->'metadata'
         FROM jsonb_array_elements(?::jsonb) AS data`,
      [
        workspaceId,
        JSON.stringify(
          Array.from({ length: RESOURCES }, (_, n) => ({
            id: newId(),
            identifier: `node-${n}`,
            kind: `k${n % KINDS}`,
            metadata: { env: `e${n % ENVIRONMENTS}`, zone: `z${n % 3}` },
          })),
        ),
      ],
    );

    const recompute = async () => {
      const started = performance.now();
      const changes = await fork().transactional(async (em) => {
        await lockWorkspaceTargets(em, workspaceId);
        return syncReleaseTargets(em, workspaceId, { all: true });
      });
      return {
        seconds: round((performance.now() - started) / 1000, 3),
        added: changes.added.length,
        removed: changes.removed.length,
      };
    };
    const fromEmpty = await recompute();
    const unchanged = await recompute();

    // Each upsert moves a resource to another environment, so its targets really change.
    const resources = new ResourceStore(fork(), secrets);
    const started = performance.now();
    for (let i = 0; i < UPSERTS; i++) {
      const n = (i * 7919) % RESOURCES;
      await new ResourceStore(fork(), secrets).upsertByIdentifier(workspaceId, `node-${n}`, {
        name: `node-${n}`,
        version: 'v1',
        kind: `k${n % KINDS}`,
        metadata: { env: `e${(n + i + 1) % ENVIRONMENTS}`, zone: `z${n % 3}` },
      });
    }
    const upsertSeconds = (performance.now() - started) / 1000;
    const targets = await resources.list(workspaceId, { limit: 1, offset: 0 });
    const [counted] = await fork().execute<{ count: number }[]>(
      'SELECT count(*)::int AS count FROM release_target WHERE workspace_id = ?',
      [workspaceId],
    );

    return {
      resources: 'total' in targets ? targets.total : targets.totalAtLeast,
      environments: ENVIRONMENTS,
      deployments: DEPLOYMENTS,
      releaseTargets: counted?.count,
      fullRecompute: { fromEmpty, unchanged },
      resourceUpserts: {
        upserts: UPSERTS,
        perSecond: round(UPSERTS / upsertSeconds, 0),
        meanMs: round((upsertSeconds * 1000) / UPSERTS),
      },
      peakRssMb: peakRssMb(),
    };
  } finally {
    await env.close();
  }
}
