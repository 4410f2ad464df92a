import { computeReleaseTargets, releaseTargetKey, type SystemLink } from '../../domain/releaseTargets';
import { startTestStack, type TestStack } from '../helpers/stack';

/**
 * Resource writes hold the workspace's target lock shared and compute the targets of the resources
 * they touched only; selector changes hold it exclusive and recompute across resources
 * (engine/targets/releaseTargetSync.ts). Racing all of them in one workspace must leave exactly the targets a
 * computation from scratch gives, with no write refused or deadlocked.
 */
describe('release targets under concurrent ingest', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const ids: Record<string, string> = {};
  const ENVIRONMENTS = ['prod', 'staging', 'dev'];
  const KINDS = ['node', 'vm', 'db'];

  const send = (method: 'put' | 'post' | 'delete', path: string, body?: object) =>
    stack.http[method](`${ws()}${path}`)
      .set(stack.auth)
      .send(body ?? {});

  /** A resource of the pool: which environment and kind it has depends on the round. */
  const resource = (n: number, round: number) => ({
    identifier: `r-${n}`,
    name: `r-${n}`,
    kind: KINDS[(n + round) % KINDS.length]!,
    version: 'v1',
    metadata: { env: ENVIRONMENTS[(n * 7 + round) % ENVIRONMENTS.length]!, tier: String((n + round) % 2) },
  });

  async function query<T extends object>(sql: string, params: unknown[] = []): Promise<T[]> {
    return stack.orm.em.fork().getConnection().execute<T[]>(sql, params);
  }

  /** The stored targets, and those a computation from scratch over the stored records gives. */
  async function storedAndFromScratch(): Promise<{ stored: string[]; fromScratch: string[] }> {
    const workspace = [stack.workspaceId];
    const stored = await query<{ resource_id: string; environment_id: string; deployment_id: string }>(
      'SELECT resource_id, environment_id, deployment_id FROM release_target WHERE workspace_id = ?',
      workspace,
    );
    const fromScratch = computeReleaseTargets({
      resources: await query(
        `SELECT id, name, version, kind, identifier, config, metadata FROM resource
          WHERE workspace_id = ? AND deleted_at IS NULL`,
        workspace,
      ),
      environments: await query(
        'SELECT id, name, metadata, resource_selector AS "resourceSelector" FROM environment WHERE workspace_id = ?',
        workspace,
      ),
      deployments: await query(
        `SELECT id, name, slug, metadata, resource_selector AS "resourceSelector" FROM deployment
          WHERE workspace_id = ?`,
        workspace,
      ),
      links: [
        ...(await query<SystemLink>(
          'SELECT system_id AS "systemId", deployment_id AS "deploymentId" FROM system_deployment WHERE workspace_id = ?',
          workspace,
        )),
        ...(await query<SystemLink>(
          'SELECT system_id AS "systemId", environment_id AS "environmentId" FROM system_environment WHERE workspace_id = ?',
          workspace,
        )),
      ],
    });
    return {
      stored: stored
        .map((row) =>
          releaseTargetKey({
            resourceId: row.resource_id,
            environmentId: row.environment_id,
            deploymentId: row.deployment_id,
          }),
        )
        .sort(),
      fromScratch: fromScratch.map(releaseTargetKey).sort(),
    };
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    ids.system = (await send('post', '/systems', { name: 'Fleet' }).expect(202)).body.id;
    for (const env of ENVIRONMENTS) {
      ids[env] = (
        await send('post', '/environments', {
          name: env,
          resourceSelector: `resource.metadata["env"] == "${env}"`,
        }).expect(202)
      ).body.id;
      await send('put', `/systems/${ids.system}/environments/${ids[env]}`).expect(202);
    }
    for (const kind of KINDS) {
      ids[kind] = (
        await send('post', '/deployments', {
          name: kind,
          slug: kind,
          resourceSelector: `resource.kind == "${kind}"`,
        }).expect(202)
      ).body.id;
      await send('put', `/systems/${ids.system}/deployments/${ids[kind]}`).expect(202);
    }
    for (const name of ['scanner-a', 'scanner-b']) {
      ids[name] = (await send('put', '/resource-providers', { name }).expect(202)).body.id;
    }
  });
  afterAll(() => stack.close());

  it('leaves exactly the targets a computation from scratch gives, every write accepted', async () => {
    const POOL = 60;
    const writes: Promise<{ status: number; text: string }>[] = [];
    for (let round = 0; round < 6; round++) {
      // Single PUTs over the whole pool, some of them of resources the providers' sets own.
      for (let n = round; n < POOL; n += 4) {
        const { identifier, ...body } = resource(n, round);
        writes.push(send('put', `/resources/identifier/${identifier}`, body));
      }
      // Two providers whose sets overlap, each taking resources over from the other, and leaving
      // out (deleting) a different part of the pool each round.
      for (const [provider, offset] of [
        ['scanner-a', 0],
        ['scanner-b', 20],
      ] as const) {
        const start = (offset + round * 7) % POOL;
        const resources = Array.from({ length: 30 }, (_, k) => resource((start + k) % POOL, round + 1));
        writes.push(send('put', `/resource-providers/${ids[provider]}/set`, { resources }));
      }
      // Selector changes, which recompute across every resource.
      const env = ENVIRONMENTS[round % ENVIRONMENTS.length]!;
      writes.push(
        send('put', `/environments/${ids[env]}`, {
          name: env,
          resourceSelector:
            round % 2 === 0
              ? `resource.metadata["env"] == "${env}" || resource.metadata["tier"] == "1"`
              : `resource.metadata["env"] == "${env}"`,
        }),
      );
      const kind = KINDS[round % KINDS.length]!;
      writes.push(
        send('put', `/deployments/${ids[kind]}`, {
          name: kind,
          slug: kind,
          resourceSelector: round % 2 === 0 ? `resource.kind != "${kind}"` : `resource.kind == "${kind}"`,
        }),
      );
    }
    const results = await Promise.all(writes);
    expect(results.filter((res) => res.status !== 202).map((res) => `${res.status} ${res.text}`)).toEqual([]);

    const { stored, fromScratch } = await storedAndFromScratch();
    // Enough targets for a missed or stale one to matter.
    expect(fromScratch.length).toBeGreaterThan(50);
    expect(stored).toEqual(fromScratch);
  });
});
