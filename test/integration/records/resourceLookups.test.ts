import type { EntityManager } from '@mikro-orm/postgresql';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Ctrlplane's reads around a resource (docs/api.md "Endpoints", Resources) — the targets a resource would get
 * (writing nothing), its deployments, its variables (read, and replaced in bulk), its target in a
 * deployment — and resource search; and `?cel=` as Ctrlplane's CLI encodes it.
 */
describe('resource lookups over HTTP', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  const ids: Record<string, string> = {};
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const identifier = encodeURIComponent('eu/api-1');

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    api = recordsApi(stack);
    ids.system = await api.system('Shop');
    ids.prod = await api.environment('prod', 'resource.metadata["env"] == "prod"', ids.system);
    ids.staging = await api.environment('staging', 'resource.metadata["env"] == "staging"', ids.system);
    ids.api = await api.deployment('api', ids.system, { resourceSelector: 'resource.kind == "service"' });
    ids.db = await api.deployment('db', ids.system, { resourceSelector: 'resource.kind == "database"' });
    ids.web = await api.deployment('web', ids.system);
    ids.apiResource = await api.resource(
      'eu/api-1',
      'service',
      { env: 'prod', team: 'shop' },
      {
        variables: [
          { key: 'region', value: 'eu', sensitive: false },
          { key: 'token', value: 's3cret', sensitive: true },
        ],
      },
    );
    await api.resource('eu/db-1', 'database', { env: 'staging', team: 'data' });
    await api.resource('us/api-100%', 'service', { env: 'staging', team: 'shop' });
  });
  afterAll(() => stack.close());

  const em = () => stack.orm.em.fork() as EntityManager;
  const count = async (table: string) =>
    (await em().execute<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;

  it('previews the targets of a resource that is not stored, and writes nothing', async () => {
    const before = [await count('resource'), await count('release_target')];
    const body = {
      name: 'New',
      version: 'v1',
      kind: 'service',
      identifier: 'eu/new',
      config: {},
      metadata: { env: 'prod' },
    };
    const res = await stack.http
      .post(`${ws()}/release-targets/resource-preview`)
      .set(stack.auth)
      .send(body)
      .expect(200);
    expect(res.body.total).toBe(2);
    const pairs = res.body.items.map(
      (item: { system: { id: string }; deployment: { id: string }; environment: { id: string } }) => [
        item.system.id,
        item.deployment.id,
        item.environment.id,
      ],
    );
    expect(pairs).toEqual(
      expect.arrayContaining([
        [ids.system, ids.api, ids.prod],
        [ids.system, ids.web, ids.prod],
      ]),
    );
    expect(res.body.items[0].deployment).toMatchObject({ slug: expect.any(String), systemIds: [ids.system] });
    const second = await stack.http
      .post(`${ws()}/release-targets/resource-preview?limit=1&offset=1`)
      .set(stack.auth)
      .send(body)
      .expect(200);
    expect(second.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(second.body.items).toHaveLength(1);
    expect([await count('resource'), await count('release_target')]).toEqual(before);

    const bad = await stack.http
      .post(`${ws()}/release-targets/resource-preview`)
      .set(stack.auth)
      .send({ name: 'x', version: 'v1', identifier: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toMatch(/problem\+json/);
  });

  it("lists a resource's deployments, and answers 404 for an unknown identifier", async () => {
    const res = await stack.http
      .get(`${ws()}/resources/identifier/${identifier}/deployments`)
      .set(stack.auth)
      .expect(200);
    expect(res.body.items.map((d: { id: string }) => d.id).sort()).toEqual([ids.api, ids.web].sort());
    await stack.http.get(`${ws()}/resources/identifier/nope/deployments`).set(stack.auth).expect(404);
  });

  it('answers the target of a resource in a deployment, 404 where it has none', async () => {
    const res = await stack.http
      .get(`${ws()}/resources/${identifier}/release-targets/deployment/${ids.api}`)
      .set(stack.auth)
      .expect(200);
    expect(res.body).toMatchObject({
      resourceId: ids.apiResource,
      environmentId: ids.prod,
      deploymentId: ids.api,
    });
    await stack.http
      .get(`${ws()}/resources/${identifier}/release-targets/deployment/${ids.db}`)
      .set(stack.auth)
      .expect(404);
  });

  it('reads the variables, and replaces them in bulk keeping a sensitive one sent back as {"sensitive": true}', async () => {
    const path = `${ws()}/resources/identifier/${identifier}/variables`;
    const read = async () => (await stack.http.get(path).set(stack.auth).expect(200)).body;
    expect(await read()).toMatchObject({
      items: [
        { resourceId: ids.apiResource, key: 'region', value: 'eu' },
        { resourceId: ids.apiResource, key: 'token', value: { sensitive: true } },
      ],
      total: 2,
    });
    const sealed = async () =>
      (await em().execute<{ value: string }[]>(`SELECT value FROM resource_variable WHERE key = 'token'`))[0]
        ?.value;
    const tokenBefore = await sealed();

    const replaced = await stack.http
      .patch(path)
      .set(stack.auth)
      .send({ region: 'us', token: { sensitive: true }, replicas: 3 })
      .expect(202);
    expect(replaced.body).toEqual({ id: ids.apiResource, message: expect.any(String) });
    expect((await read()).items).toEqual([
      { resourceId: ids.apiResource, key: 'region', value: 'us' },
      { resourceId: ids.apiResource, key: 'replicas', value: 3 },
      { resourceId: ids.apiResource, key: 'token', value: { sensitive: true } },
    ]);
    expect(await sealed()).toBe(tokenBefore);

    for (const body of [{ region: null }, [{ key: 'a' }], { '': 1 }]) {
      const refused = await stack.http
        .patch(path)
        .set(stack.auth)
        .send(body as object);
      expect(refused.status).toBe(400);
    }
    expect((await read()).total).toBe(3);
    await stack.http
      .patch(`${ws()}/resources/identifier/nope/variables`)
      .set(stack.auth)
      .send({})
      .expect(404);
    await stack.http.patch(path).set(stack.auth).send({}).expect(202);
    expect((await read()).items).toEqual([]);
  });

  it('searches by kind, metadata, text (taken literally) and sorts', async () => {
    const search = async (body: object) =>
      (await stack.http.post(`${ws()}/resources/search`).set(stack.auth).send(body).expect(200)).body as {
        items: { identifier: string }[];
        total: number;
      };
    const identifiers = (page: { items: { identifier: string }[] }) => page.items.map((r) => r.identifier);
    expect(identifiers(await search({ kinds: ['service'], metadata: { env: 'prod' } }))).toEqual([
      'eu/api-1',
    ]);
    expect(identifiers(await search({ query: 'API', sortBy: 'name', order: 'desc' }))).toEqual([
      'us/api-100%',
      'eu/api-1',
    ]);
    expect(identifiers(await search({ query: '100%' }))).toEqual(['us/api-100%']);
    expect(identifiers(await search({ query: '_' }))).toEqual([]);
    expect((await search({ identifiers: ['eu/db-1', 'nope'], limit: 1 })).total).toBe(1);
    for (const body of [{ limit: 1001 }, { kinds: [] }, { sortBy: 'id' }, { providerIds: ['x'] }]) {
      const refused = await stack.http.post(`${ws()}/resources/search`).set(stack.auth).send(body);
      expect(refused.status).toBe(400);
    }
  });

  it('reads ?cel= encoded once more than needed, as ctrlc sends it', async () => {
    const doubly = encodeURIComponent(encodeURIComponent('resource.kind == "database"').replace(/%20/g, '+'));
    const res = await stack.http.get(`${ws()}/resources?cel=${doubly}`).set(stack.auth).expect(200);
    expect(res.body.items.map((r: { identifier: string }) => r.identifier)).toEqual(['eu/db-1']);
  });
});
