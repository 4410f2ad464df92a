import type { Response } from 'supertest';
import {
  ASSIGNMENT_TABLES,
  REDACTED,
  refusedWithoutWrites as refusedIn,
  sqlOf,
  TIMESTAMP_PATTERN as ISO_TIMESTAMP,
  UUID_PATTERN as UUID,
} from '../../helpers/recordFixtures';
import {
  createOtherWorkspace,
  expectFieldError,
  withoutMessage,
  type WorkspaceAccess,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Resources over HTTP, one resource's life in order: created and replaced by identifier, read, listed with
 * CEL, patched (variables sealed), deleted and created again. 401, another workspace's resource (404) and
 * an identifier taken by a PATCH (409): contract.test.ts.
 */
describe('resources over HTTP', () => {
  let stack: TestStack;
  let other: WorkspaceAccess;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const sql = sqlOf(() => stack);
  const query = <T extends object>(text: string, params: unknown[] = []) => sql<T[]>(text, params);
  const refusedWithoutWrites = (send: () => PromiseLike<Response>) =>
    refusedIn(stack, ASSIGNMENT_TABLES, send);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    other = await createOtherWorkspace(stack);
  });
  afterAll(() => stack.close());

  const byIdentifier = (identifier: string, base = ws()) =>
    `${base}/resources/identifier/${encodeURIComponent(identifier)}`;
  const byId = (id: string, base = ws()) => `${base}/resources/${id}`;
  const patchPath = (id: string) => `/v1/resources/${id}`;
  let api: Record<string, unknown> & { id: string };
  let databaseId: string;

  async function storedVariables(resourceId: string) {
    return query<{ key: string; value: unknown; sensitive: boolean }>(
      'SELECT key, value, sensitive FROM resource_variable WHERE resource_id = ? ORDER BY key',
      [resourceId],
    );
  }

  it('creates a resource by URL-encoded identifier (202), with every field of the resource record', async () => {
    const res = await stack.http
      .put(byIdentifier('prod/api'))
      .set(stack.auth)
      .send({
        name: 'API',
        version: 'v1',
        kind: 'service',
        config: { replicas: 2, image: { tag: '1.0.0' } },
        metadata: { env: 'prod', team: 'payments' },
        variables: { region: 'eu-west-1' },
      })
      .expect(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'API',
      version: 'v1',
      kind: 'service',
      identifier: 'prod/api',
      config: { replicas: 2, image: { tag: '1.0.0' } },
      metadata: { env: 'prod', team: 'payments' },
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      // Required by the specification in every answer: null while the resource is live.
      deletedAt: null,
      workspaceId: stack.workspaceId,
      variables: { region: 'eu-west-1' },
      message: 'Resource created',
    });
    api = withoutMessage(res.body) as typeof api;
  });

  it('replaces the resource with the same identifier (202), keeping its id and creation time', async () => {
    const res = await stack.http
      .put(byIdentifier('prod/api'))
      .set(stack.auth)
      .send({ name: 'API', version: 'v2', kind: 'service', metadata: { env: 'prod' } })
      .expect(202);
    expect(res.body).toEqual({
      ...api,
      version: 'v2',
      config: {},
      metadata: { env: 'prod' },
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Resource updated',
    });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(api.updatedAt as string));
    api = withoutMessage(res.body) as typeof api;
    expect(await query('SELECT id FROM resource WHERE identifier = ?', ['prod/api'])).toEqual([
      { id: api.id },
    ]);
  });

  it('reads the same record by identifier and by id', async () => {
    const viaIdentifier = await stack.http.get(byIdentifier('prod/api')).set(stack.auth).expect(200);
    const viaId = await stack.http.get(byId(api.id)).set(stack.auth).expect(200);
    expect(viaIdentifier.body).toEqual(api);
    expect(viaId.body).toEqual(api);
  });

  it('lists live resources oldest first and filters them with CEL over resource', async () => {
    const database = await stack.http
      .put(byIdentifier('prod/db'))
      .set(stack.auth)
      .send({ name: 'Database', version: '15', kind: 'database', metadata: { env: 'prod' } })
      .expect(202);
    expect(database.body.message).toBe('Resource created');
    const databaseRecord = withoutMessage(database.body);
    databaseId = database.body.id;

    const all = await stack.http.get(`${ws()}/resources`).set(stack.auth).expect(200);
    expect(all.body).toEqual({ items: [api, databaseRecord], total: 2, limit: 50, offset: 0 });

    const databases = await stack.http
      .get(`${ws()}/resources`)
      .query({ cel: 'resource.kind == "database"' })
      .set(stack.auth)
      .expect(200);
    expect(databases.body).toEqual({
      items: [databaseRecord],
      total: 1,
      totalIsExact: true,
      limit: 50,
      offset: 0,
    });

    const prodPage = await stack.http
      .get(`${ws()}/resources`)
      .query({ cel: 'resource.metadata["env"] == "prod"', limit: 1, offset: 1 })
      .set(stack.auth)
      .expect(200);
    expect(prodPage.body).toEqual({
      items: [databaseRecord],
      total: 2,
      totalIsExact: true,
      limit: 1,
      offset: 1,
    });
  });

  it('refuses a list filter that is not valid CEL, naming the position', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http.get(`${ws()}/resources`).query({ cel: 'resource.knd == "x"' }).set(stack.auth),
    );
    expectFieldError(res, 'query.cel', 'invalid CEL: line 1, column 10: No such key: knd');
  });

  it('patches only the given fields at /v1/resources/{id}, replacing the variables and sealing sensitive ones', async () => {
    const res = await stack.http
      .patch(patchPath(api.id))
      .set(stack.auth)
      .send({
        version: 'v3',
        variables: [
          { key: 'region', value: 'eu-central-1', sensitive: false },
          { key: 'password', value: 'hunter2', sensitive: true },
        ],
      })
      .expect(200);
    expect(res.body).toEqual({
      ...api,
      version: 'v3',
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      variables: { password: REDACTED, region: 'eu-central-1' },
      message: 'Resource updated successfully',
    });
    const { message: _message, ...record } = res.body;
    api = record;

    const stored = await storedVariables(api.id);
    expect(stored).toEqual([
      { key: 'password', value: expect.stringMatching(/^fd2:/), sensitive: true },
      { key: 'region', value: 'eu-central-1', sensitive: false },
    ]);
    expect(
      stack.secrets.forRecord(stack.workspaceId, 'resource', api.id).openJson(stored[0]!.value as string),
    ).toBe('hunter2');
    expect(JSON.stringify(res.body)).not.toContain('hunter2');

    const read = await stack.http.get(byId(api.id)).set(stack.auth).expect(200);
    expect(read.body).toEqual(api);
  });

  it('keeps a stored sensitive variable when {"sensitive": true} is sent back', async () => {
    const [sealedBefore] = await storedVariables(api.id);
    const res = await stack.http
      .patch(patchPath(api.id))
      .set(stack.auth)
      .send({ variables: [{ key: 'password', value: REDACTED, sensitive: true }] })
      .expect(200);
    expect(res.body.variables).toEqual({ password: REDACTED });
    expect(await storedVariables(api.id)).toEqual([sealedBefore]);
    api = { ...api, variables: { password: REDACTED }, updatedAt: res.body.updatedAt };
  });

  it('refuses {"sensitive": true} for a variable with nothing stored, and writes nothing', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .patch(patchPath(api.id))
        .set(stack.auth)
        .send({
          name: 'Renamed',
          variables: [
            { key: 'region', value: 'eu-north-1', sensitive: false },
            { key: 'token', value: REDACTED, sensitive: true },
          ],
        }),
    );
    expectFieldError(res, 'body.variables[1].value');
    expect((await stack.http.get(byId(api.id)).set(stack.auth).expect(200)).body.name).toBe('API');
  });

  it('refuses a PATCH that names another workspace, with the path body.workspaceId', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http.patch(patchPath(api.id)).set(stack.auth).send({ workspaceId: other.id, name: 'Moved' }),
    );
    expectFieldError(res, 'body.workspaceId');
  });

  it('accepts a PATCH that names its own workspace', async () => {
    const res = await stack.http
      .patch(patchPath(api.id))
      .set(stack.auth)
      .send({ workspaceId: stack.workspaceId })
      .expect(200);
    expect(res.body).toMatchObject({ id: api.id, workspaceId: stack.workspaceId, name: 'API' });
    api = { ...api, updatedAt: res.body.updatedAt };
  });

  it.each([
    [
      'a PUT without kind and with an empty name',
      'put',
      { name: ' ', version: 'v1' },
      ['body.name', 'body.kind'],
    ],
    [
      'a PUT whose metadata is not a string map',
      'put',
      { name: 'x', version: 'v1', kind: 'k', metadata: { n: 1 } },
      ['body.metadata.n'],
    ],
    [
      'a PATCH whose variable has no key',
      'patch',
      { variables: [{ value: 'x' }] },
      ['body.variables[0].key'],
    ],
    [
      'a PUT with duplicate variable keys',
      'put',
      {
        name: 'x',
        version: 'v1',
        kind: 'k',
        variables: [
          { key: 'a', value: 1 },
          { key: 'a', value: 2 },
        ],
      },
      ['body.variables[1].key'],
    ],
    [
      'a PATCH with duplicate variable keys',
      'patch',
      {
        variables: [
          { key: 'a', value: 1 },
          { key: 'a', value: 2 },
        ],
      },
      ['body.variables[1].key'],
    ],
    ['a PATCH with a version that is not a string', 'patch', { version: 3 }, ['body.version']],
  ] as const)(
    'answers 400 with the field paths for %s, and writes nothing',
    async (_, method, body, paths) => {
      const res = await refusedWithoutWrites(() =>
        method === 'put'
          ? stack.http.put(byIdentifier('prod/invalid')).set(stack.auth).send(body)
          : stack.http.patch(patchPath(api.id)).set(stack.auth).send(body),
      );
      for (const path of paths) expectFieldError(res, path);
    },
  );

  it('deletes by id (202) and by identifier (200, as Ctrlplane’s clients expect); the record stays readable by id with deletedAt set', async () => {
    const live = (await stack.http.get(byId(api.id)).set(stack.auth).expect(200)).body;
    const deletedById = await stack.http.delete(byId(databaseId)).set(stack.auth).expect(202);
    expect(deletedById.body).toEqual({ id: databaseId, message: 'Resource deleted' });
    const deletedByIdentifier = await stack.http.delete(byIdentifier('prod/api')).set(stack.auth).expect(200);
    expect(deletedByIdentifier.body).toEqual({ id: api.id, message: 'Resource deleted' });

    const afterDelete = await stack.http.get(byId(api.id)).set(stack.auth).expect(200);
    expect(afterDelete.body).toEqual({
      ...live,
      deletedAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const database = await stack.http.get(byId(databaseId)).set(stack.auth).expect(200);
    expect(database.body.deletedAt).toEqual(expect.stringMatching(ISO_TIMESTAMP));

    await stack.http.get(byIdentifier('prod/api')).set(stack.auth).expect(404);
    await stack.http.get(byIdentifier('prod/db')).set(stack.auth).expect(404);
    const list = await stack.http.get(`${ws()}/resources`).set(stack.auth).expect(200);
    expect(list.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
  });

  it('answers 404 to a second delete or a PATCH of a deleted resource, and writes nothing', async () => {
    for (const send of [
      () => stack.http.delete(byId(api.id)).set(stack.auth),
      () => stack.http.delete(byIdentifier('prod/api')).set(stack.auth),
      () => stack.http.patch(patchPath(api.id)).set(stack.auth).send({ name: 'Revived' }),
    ]) {
      expect((await refusedWithoutWrites(send)).status).toBe(404);
    }
  });

  it('creates a new resource with a new id when a deleted identifier is PUT again', async () => {
    const res = await stack.http
      .put(byIdentifier('prod/api'))
      .set(stack.auth)
      .send({ name: 'API again', version: 'v4', kind: 'service' })
      .expect(202);
    expect(res.body).toMatchObject({ identifier: 'prod/api', variables: {}, message: 'Resource created' });
    expect(res.body).toHaveProperty('deletedAt', null);
    expect(res.body.id).toEqual(expect.stringMatching(UUID));
    expect(res.body.id).not.toBe(api.id);
    const old = await stack.http.get(byId(api.id)).set(stack.auth).expect(200);
    expect(old.body.deletedAt).toEqual(expect.stringMatching(ISO_TIMESTAMP));
    const current = await stack.http.get(byIdentifier('prod/api')).set(stack.auth).expect(200);
    expect(current.body.id).toBe(res.body.id);
  });

  it('replaces the variables on PUT, keeping a key that is sent again with its new value', async () => {
    const created = await stack.http
      .put(byIdentifier('staging/web'))
      .set(stack.auth)
      .send({
        name: 'Web',
        version: 'v1',
        kind: 'service',
        variables: { region: 'eu-west-1', tier: 'silver' },
      })
      .expect(202);
    expect(created.body.variables).toEqual({ region: 'eu-west-1', tier: 'silver' });

    const replaced = await stack.http
      .put(byIdentifier('staging/web'))
      .set(stack.auth)
      .send({
        name: 'Web',
        version: 'v1',
        kind: 'service',
        variables: [
          { key: 'region', value: 'us-east-1', sensitive: false },
          { key: 'replicas', value: 3, sensitive: false },
        ],
      })
      .expect(202);
    expect(replaced.body.variables).toEqual({ region: 'us-east-1', replicas: 3 });
    expect(await storedVariables(created.body.id)).toEqual([
      { key: 'region', value: 'us-east-1', sensitive: false },
      { key: 'replicas', value: 3, sensitive: false },
    ]);
  });

  it('refuses a null variable value with 400 and writes nothing', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(byIdentifier('staging/worker'))
        .set(stack.auth)
        .send({ name: 'Worker', version: 'v1', kind: 'service', variables: { optional: null } })
        .expect(400),
    );
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('body.variables.optional');
  });
});
