import type { EntityManager } from '@mikro-orm/postgresql';
import { syncReleaseTargets } from '../../engine/targets';
import { startTestStack, type TestStack } from '../helpers/stack';

/**
 * The release-target matrix of the records issue: 4 resources {qa, dev} × {service, database},
 * 2 deployments selecting by kind, 2 environments selecting by metadata, one system.
 */
describe('release targets', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const ids: Record<string, string> = {};

  const put = (path: string, body: object) => stack.http.put(`${ws()}${path}`).set(stack.auth).send(body);
  const post = (path: string, body: object) => stack.http.post(`${ws()}${path}`).set(stack.auth).send(body);

  async function storedKeys(): Promise<string[]> {
    const res = await stack.http.get(`${ws()}/release-targets?limit=1000`).set(stack.auth).expect(200);
    return (res.body.items as { key: string }[]).map((t) => t.key).sort();
  }

  const key = (resource: string, environment: string, deployment: string) =>
    `${ids[resource]}-${ids[environment]}-${ids[deployment]}`;

  async function upsertResource(name: string, kind: string, env: string) {
    const res = await put(`/resources/identifier/${name}`, { name, version: 'v1', kind, metadata: { env } });
    expect([202]).toContain(res.status);
    ids[name] = res.body.id;
    return res;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    for (const [name, kind, env] of [
      ['qa-service', 'service', 'qa'],
      ['qa-database', 'database', 'qa'],
      ['dev-service', 'service', 'dev'],
      ['dev-database', 'database', 'dev'],
    ] as const) {
      await upsertResource(name, kind, env);
    }
    for (const [name, kind] of [
      ['api', 'service'],
      ['db', 'database'],
    ]) {
      const res = await post('/deployments', {
        name,
        slug: name,
        resourceSelector: `resource.kind == "${kind}"`,
      }).expect(202);
      ids[name!] = res.body.id;
    }
    for (const env of ['qa', 'dev']) {
      const res = await post('/environments', {
        name: env,
        resourceSelector: `resource.metadata["env"] == "${env}"`,
      }).expect(202);
      ids[env] = res.body.id;
    }
    ids.system = (await post('/systems', { name: 'Shop' }).expect(202)).body.id;
  });
  afterAll(() => stack.close());

  it('has none until the deployments and environments share a system', async () => {
    expect(await storedKeys()).toEqual([]);
    for (const name of ['api', 'db'])
      await put(`/systems/${ids.system}/deployments/${ids[name]}`, {}).expect(202);
    expect(await storedKeys()).toEqual([]);
    for (const name of ['qa', 'dev'])
      await put(`/systems/${ids.system}/environments/${ids[name]}`, {}).expect(202);
  });

  it('gives the matrix exactly 4 targets', async () => {
    expect(await storedKeys()).toEqual(
      [
        key('qa-service', 'qa', 'api'),
        key('qa-database', 'qa', 'db'),
        key('dev-service', 'dev', 'api'),
        key('dev-database', 'dev', 'db'),
      ].sort(),
    );
    const one = await stack.http
      .get(`${ws()}/release-targets/${key('qa-service', 'qa', 'api')}`)
      .set(stack.auth)
      .expect(200);
    expect(one.body).toMatchObject({
      resourceId: ids['qa-service'],
      environmentId: ids.qa,
      deploymentId: ids.api,
    });
    const filtered = await stack.http
      .get(`${ws()}/release-targets?environmentId=${ids.qa}`)
      .set(stack.auth)
      .expect(200);
    expect(filtered.body.total).toBe(2);
  });

  it('moves a resource whose metadata changes to its new environment', async () => {
    await stack.http
      .patch(`/v1/resources/${ids['qa-service']}`)
      .set(stack.auth)
      .send({ metadata: { env: 'dev' } })
      .expect(200);
    expect(await storedKeys()).toEqual(
      [
        key('qa-service', 'dev', 'api'),
        key('qa-database', 'qa', 'db'),
        key('dev-service', 'dev', 'api'),
        key('dev-database', 'dev', 'db'),
      ].sort(),
    );
    await upsertResource('qa-service', 'service', 'qa');
  });

  it('follows a deployment selector change', async () => {
    await put(`/deployments/${ids.api}`, {
      name: 'api',
      slug: 'api',
      resourceSelector: 'resource.kind != ""',
    }).expect(202);
    expect(await storedKeys()).toEqual(
      [
        key('qa-service', 'qa', 'api'),
        key('qa-database', 'qa', 'api'),
        key('qa-database', 'qa', 'db'),
        key('dev-service', 'dev', 'api'),
        key('dev-database', 'dev', 'api'),
        key('dev-database', 'dev', 'db'),
      ].sort(),
    );
    await put(`/deployments/${ids.api}`, {
      name: 'api',
      slug: 'api',
      resourceSelector: 'resource.kind == "service"',
    }).expect(202);
    expect(await storedKeys()).toHaveLength(4);
  });

  it('follows system links', async () => {
    await stack.http
      .delete(`${ws()}/systems/${ids.system}/environments/${ids.dev}`)
      .set(stack.auth)
      .expect(202);
    expect(await storedKeys()).toEqual(
      [key('qa-service', 'qa', 'api'), key('qa-database', 'qa', 'db')].sort(),
    );
    await put(`/systems/${ids.system}/environments/${ids.dev}`, {}).expect(202);
    expect(await storedKeys()).toHaveLength(4);
  });

  it('drops the targets of a deleted resource', async () => {
    await stack.http.delete(`${ws()}/resources/${ids['dev-database']}`).set(stack.auth).expect(202);
    expect(await storedKeys()).toEqual(
      [
        key('qa-service', 'qa', 'api'),
        key('qa-database', 'qa', 'db'),
        key('dev-service', 'dev', 'api'),
      ].sort(),
    );
  });

  it('stays exact under concurrent writes: stored targets equal a recompute from scratch', async () => {
    const writes: Promise<unknown>[] = [];
    for (let n = 0; n < 30; n++) {
      const env = n % 3 === 0 ? 'qa' : 'dev';
      writes.push(
        put(`/resources/identifier/burst-${n % 10}`, {
          name: `burst-${n % 10}`,
          version: 'v1',
          kind: n % 2 ? 'service' : 'database',
          metadata: { env },
        }),
      );
      if (n % 10 === 5) {
        writes.push(
          put(`/environments/${ids.dev}`, {
            name: 'dev',
            resourceSelector:
              n % 20 === 5 ? 'resource.metadata["env"] == "dev"' : 'resource.metadata["env"] != "qa"',
          }),
        );
      }
    }
    const results = (await Promise.all(writes)) as { status: number }[];
    expect(results.every((res) => res.status === 202)).toBe(true);

    const stored = await storedKeys();
    const em = stack.orm.em.fork() as EntityManager;
    await em.transactional(async (tx) => {
      const changes = await syncReleaseTargets(tx, stack.workspaceId, { all: true });
      expect(changes).toEqual({ added: [], removed: [] });
    });
    expect(await storedKeys()).toEqual(stored);
  });
});
