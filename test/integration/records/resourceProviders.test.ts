import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  createOtherWorkspace,
  expectFieldError,
  expectNothingWritten,
  expectProblem,
  type WorkspaceAccess,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** What `ctrlc` sends as every resource's creation time. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

/** Every table a provider's endpoints write to; a refused request must leave all of them as they were. */
const WATCHED_TABLES = [
  'resource_provider',
  'resource',
  'resource_variable',
  'release_target',
  'outbox',
] as const;

interface SentResource {
  identifier: string;
  name: string;
  kind: string;
  version: string;
  config: Record<string, unknown>;
  metadata: Record<string, string>;
  createdAt?: string;
  variables?: Record<string, unknown>;
}

/** A resource as `ctrlc sync` sends it. */
function scanned(identifier: string, kind: string, metadata: Record<string, string> = {}): SentResource {
  return { identifier, name: identifier, kind, version: 'v1', config: {}, metadata, createdAt: GO_ZERO_TIME };
}

describe('resource providers over HTTP', () => {
  let stack: TestStack;
  let other: WorkspaceAccess;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const providers = (base = ws()) => `${base}/resource-providers`;
  const byName = (name: string, base = ws()) => `${providers(base)}/name/${encodeURIComponent(name)}`;
  const setPath = (id: string, base = ws()) => `${providers(base)}/${id}/set`;
  const ids: Record<string, string> = {};

  async function query<T extends object>(sql: string, params: unknown[] = []): Promise<T[]> {
    return stack.orm.em.fork().getConnection().execute<T[]>(sql, params);
  }

  async function refusedWithoutWrites(send: () => PromiseLike<Response>): Promise<Response> {
    const res = await expectNothingWritten(stack, WATCHED_TABLES, send);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    return res;
  }

  /** Release targets by resource identifier, as `identifier/environment name`. */
  async function targets(): Promise<string[]> {
    const rows = await query<{ target: string }>(
      `SELECT r.identifier || '/' || e.name AS target FROM release_target t
         JOIN resource r ON r.id = t.resource_id JOIN environment e ON e.id = t.environment_id
        WHERE t.workspace_id = ? ORDER BY 1`,
      [stack.workspaceId],
    );
    return rows.map((row) => row.target);
  }

  /** Live resources of the workspace: identifier → provider id. */
  async function liveResources(): Promise<Record<string, string | null>> {
    const rows = await query<{ identifier: string; provider_id: string | null }>(
      'SELECT identifier, provider_id FROM resource WHERE workspace_id = ? AND deleted_at IS NULL',
      [stack.workspaceId],
    );
    return Object.fromEntries(rows.map((row) => [row.identifier, row.provider_id]));
  }

  const upsert = (body: object, base = ws(), auth = stack.auth) =>
    stack.http.put(providers(base)).set(auth).send(body);
  const set = (providerId: string, resources: SentResource[]) =>
    stack.http.put(setPath(providerId)).set(stack.auth).send({ resources });

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    other = await createOtherWorkspace(stack);
    // One deployment of every kind and two environments by `env`, in one system: a resource with
    // `env` has one target per environment it matches.
    const post = (path: string, body: object) =>
      stack.http.post(`${ws()}${path}`).set(stack.auth).send(body).expect(202);
    const system = (await post('/systems', { name: 'Fleet' })).body.id as string;
    const deployment = (
      await post('/deployments', { name: 'Agent', slug: 'agent', resourceSelector: 'true' })
    ).body.id as string;
    await stack.http
      .put(`${ws()}/systems/${system}/deployments/${deployment}`)
      .set(stack.auth)
      .send({})
      .expect(202);
    for (const env of ['prod', 'qa']) {
      const environment = (
        await post('/environments', {
          name: env,
          resourceSelector: `resource.metadata["env"] == "${env}"`,
        })
      ).body.id as string;
      await stack.http
        .put(`${ws()}/systems/${system}/environments/${environment}`)
        .set(stack.auth)
        .send({})
        .expect(202);
    }
  });
  afterAll(() => stack.close());

  describe('upsert by name', () => {
    it('creates a provider from what ctrlc sends (an empty id): 202 with a generated id', async () => {
      const res = await upsert({ id: '', name: 'k8s-scanner' }).expect(202);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        workspaceId: stack.workspaceId,
        name: 'k8s-scanner',
        metadata: {},
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      ids.scanner = res.body.id;
    });

    it('finds the same provider by name on the next run, keeping its id and its metadata unless given', async () => {
      expect(
        (await upsert({ id: '', name: 'k8s-scanner', metadata: { cluster: 'eu' } }).expect(202)).body,
      ).toMatchObject({ id: ids.scanner, metadata: { cluster: 'eu' } });
      expect((await upsert({ name: 'k8s-scanner', id: randomUUID() }).expect(202)).body).toMatchObject({
        id: ids.scanner,
        metadata: { cluster: 'eu' },
      });
      expect(await query('SELECT id FROM resource_provider WHERE name = ?', ['k8s-scanner'])).toEqual([
        { id: ids.scanner },
      ]);
    });

    it('gives a new provider the id the caller chose', async () => {
      const chosen = randomUUID();
      expect((await upsert({ id: chosen, name: 'cloud-inventory' }).expect(202)).body.id).toBe(chosen);
      ids.inventory = chosen;
    });

    it('answers two first runs at once with the one provider', async () => {
      const [a, b] = await Promise.all([
        upsert({ id: '', name: 'racer' }),
        upsert({ id: '', name: 'racer' }),
      ]);
      expect([a!.status, b!.status]).toEqual([202, 202]);
      expect(a!.body.id).toBe(b!.body.id);
    });

    it('renames the provider whose id the body repeats, keeping its id (as Terraform renames)', async () => {
      const chosen = randomUUID();
      await upsert({ id: chosen, name: 'before-rename', metadata: { team: 'a' } }).expect(202);
      const renamed = await upsert({ id: chosen, name: 'after-rename' }).expect(202);
      expect(renamed.body).toMatchObject({ id: chosen, name: 'after-rename', metadata: { team: 'a' } });
      expect((await stack.http.get(byName('after-rename')).set(stack.auth).expect(200)).body.id).toBe(chosen);
      await stack.http.get(byName('before-rename')).set(stack.auth).expect(404);
      await stack.http.delete(byName('after-rename')).set(stack.auth).expect(202);
    });

    it('refuses an id that is not a UUID, a missing or empty name, and a rename onto a taken name', async () => {
      expectFieldError(await refusedWithoutWrites(() => upsert({ id: 'abc', name: 'x' })), 'body.id');
      expectFieldError(await refusedWithoutWrites(() => upsert({ id: '' })), 'body.name');
      expectFieldError(await refusedWithoutWrites(() => upsert({ name: '  ' })), 'body.name');
      expectFieldError(
        await refusedWithoutWrites(() => upsert({ name: 'x', metadata: { n: 1 } })),
        'body.metadata.n',
      );
      expectProblem(
        await refusedWithoutWrites(() => upsert({ id: ids.scanner, name: 'cloud-inventory' })),
        409,
        'duplicate',
      );
    });
  });

  describe('reads', () => {
    it('gets a provider by name (200) and answers 404 problem+json for an unknown name', async () => {
      const res = await stack.http.get(byName('k8s-scanner')).set(stack.auth).expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ id: ids.scanner, name: 'k8s-scanner' });
      expectProblem(await stack.http.get(byName('nobody')).set(stack.auth), 404, 'not_found');
      expectProblem(await stack.http.get(`${byName('nobody')}/resources`).set(stack.auth), 404, 'not_found');
    });

    it("keeps providers within their workspace: another workspace's name and id answer 404", async () => {
      await stack.http
        .get(byName('k8s-scanner', `/v1/workspaces/${other.id}`))
        .set(other.auth)
        .expect(404);
      await stack.http.get(byName('k8s-scanner')).set(other.auth).expect(404);
      await expectNothingWritten(stack, WATCHED_TABLES, () =>
        stack.http
          .put(setPath(ids.scanner!, `/v1/workspaces/${other.id}`))
          .set(other.auth)
          .send({ resources: [scanned('stolen', 'node')] })
          .expect(404),
      );
      await stack.http
        .delete(byName('k8s-scanner', `/v1/workspaces/${other.id}`))
        .set(other.auth)
        .expect(404);
      // The same name in the other workspace is another provider.
      const theirs = await upsert(
        { id: '', name: 'k8s-scanner' },
        `/v1/workspaces/${other.id}`,
        other.auth,
      ).expect(202);
      expect(theirs.body.id).not.toBe(ids.scanner);
    });
  });

  describe('set', () => {
    it('creates every resource of a first set, owned by the provider, with their release targets', async () => {
      const res = await set(ids.scanner!, [
        scanned('node-a', 'node', { env: 'prod' }),
        scanned('node-b', 'node', { env: 'qa' }),
        { ...scanned('node-c', 'node', { env: 'prod' }), variables: { zone: 'a' } },
      ]).expect(202);
      expect(res.body).toEqual({ ok: true, method: 'set', created: 3, replaced: 0, deleted: 0 });
      expect(await liveResources()).toEqual({
        'node-a': ids.scanner,
        'node-b': ids.scanner,
        'node-c': ids.scanner,
      });
      expect(await targets()).toEqual(['node-a/prod', 'node-b/qa', 'node-c/prod']);

      const listed = await stack.http
        .get(`${byName('k8s-scanner')}/resources`)
        .set(stack.auth)
        .expect(200);
      expect(listed.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
      // Resources of one set share their creation time: their order among themselves is their ids',
      // made in the order of the set (db/ids.ts: monotonic within a millisecond).
      const listedById = new Map<string, Record<string, unknown> & { id: string; createdAt: string }>(
        listed.body.items.map((r: { identifier: string }) => [r.identifier, r]),
      );
      expect([...listedById.keys()]).toEqual(['node-a', 'node-b', 'node-c']);
      expect(listedById.get('node-c')).toMatchObject({ providerId: ids.scanner, variables: { zone: 'a' } });
      // The creation time sent is ignored.
      expect(Date.parse(listedById.get('node-a')!.createdAt)).toBeGreaterThan(Date.parse('2020-01-01'));
      ids['node-a'] = listedById.get('node-a')!.id;
      ids['node-b'] = listedById.get('node-b')!.id;
      const page = await stack.http
        .get(`${byName('k8s-scanner')}/resources?limit=1&offset=1`)
        .set(stack.auth);
      expect(page.body).toMatchObject({
        total: 3,
        limit: 1,
        offset: 1,
        items: [{ id: listed.body.items[1].id }],
      });
    });

    it("lists a set's new resources in the set's order, not their identifiers' (docs/api.md)", async () => {
      // Ctrlplane's Terraform provider writes a provider's resources as a list and reads it back
      // from this list: another order would plan a change after every apply.
      const base = `/v1/workspaces/${other.id}`;
      const provider = (await upsert({ id: '', name: 'ordered' }, base, other.auth).expect(202)).body.id;
      const sent = ['res-2', 'res-10', 'res-1', 'res-20', 'res-3'];
      await stack.http
        .put(setPath(provider, base))
        .set(other.auth)
        .send({ resources: sent.map((identifier) => scanned(identifier, 'node')) })
        .expect(202);
      const listed = await stack.http
        .get(`${byName('ordered', base)}/resources`)
        .set(other.auth)
        .expect(200);
      expect(listed.body.items.map((r: { identifier: string }) => r.identifier)).toEqual(sent);
    });

    it('replaces the resources named again (same id), deletes those left out, and moves their targets', async () => {
      const res = await set(ids.scanner!, [
        scanned('node-a', 'node', { env: 'prod' }),
        scanned('node-b', 'node', { env: 'prod' }),
        scanned('node-d', 'node', { env: 'qa' }),
      ]).expect(202);
      expect(res.body).toEqual({ ok: true, method: 'set', created: 1, replaced: 2, deleted: 1 });
      expect(await liveResources()).toEqual({
        'node-a': ids.scanner,
        'node-b': ids.scanner,
        'node-d': ids.scanner,
      });
      expect(await targets()).toEqual(['node-a/prod', 'node-b/prod', 'node-d/qa']);
      const nodeB = await stack.http.get(`${ws()}/resources/identifier/node-b`).set(stack.auth).expect(200);
      expect(nodeB.body).toMatchObject({
        id: ids['node-b'],
        metadata: { env: 'prod' },
        providerId: ids.scanner,
      });
      const gone = await query<{ deleted: boolean }>(
        'SELECT deleted_at IS NOT NULL AS deleted FROM resource WHERE identifier = ?',
        ['node-c'],
      );
      expect(gone).toEqual([{ deleted: true }]);
    });

    it('takes over a resource of the same identifier from no provider or another one, and leaves others alone', async () => {
      await stack.http
        .put(`${ws()}/resources/identifier/manual`)
        .set(stack.auth)
        .send({ name: 'manual', version: 'v1', kind: 'vm', metadata: { env: 'qa' } })
        .expect(202);
      await set(ids.inventory!, [scanned('vm-1', 'vm')]).expect(202);
      const res = await set(ids.scanner!, [
        scanned('node-a', 'node', { env: 'prod' }),
        scanned('node-b', 'node', { env: 'prod' }),
        scanned('node-d', 'node', { env: 'qa' }),
        scanned('manual', 'vm', { env: 'qa' }),
        scanned('vm-1', 'vm'),
      ]).expect(202);
      expect(res.body).toMatchObject({ created: 0, replaced: 5, deleted: 0 });
      expect(await liveResources()).toEqual({
        'node-a': ids.scanner,
        'node-b': ids.scanner,
        'node-d': ids.scanner,
        manual: ids.scanner,
        'vm-1': ids.scanner,
      });
      // The inventory's next set no longer owns vm-1: leaving it out deletes nothing.
      expect((await set(ids.inventory!, []).expect(202)).body).toMatchObject({ deleted: 0 });
      expect(Object.keys(await liveResources())).toContain('vm-1');
    });

    it('accepts what ctrlc sends besides (deletedAt, lockedAt, updatedAt) and ignores it', async () => {
      await stack.http
        .put(setPath(ids.scanner!))
        .set(stack.auth)
        .send({
          resources: (['node-a', 'node-b', 'node-d', 'manual', 'vm-1'] as const).map((identifier) => ({
            ...scanned(identifier, identifier.startsWith('node') ? 'node' : 'vm', {
              env: identifier === 'node-a' || identifier === 'node-b' ? 'prod' : 'qa',
            }),
            updatedAt: GO_ZERO_TIME,
            lockedAt: GO_ZERO_TIME,
            deletedAt: GO_ZERO_TIME,
          })),
        })
        .expect(202);
      expect(Object.keys(await liveResources()).sort()).toEqual([
        'manual',
        'node-a',
        'node-b',
        'node-d',
        'vm-1',
      ]);
    });

    it('refuses a bad set whole, changing nothing: missing fields, duplicate identifiers, too many, bad timestamps', async () => {
      const send = (body: unknown) => () =>
        stack.http
          .put(setPath(ids.scanner!))
          .set(stack.auth)
          .send(body as object);
      expectFieldError(await refusedWithoutWrites(send({})), 'body.resources');
      expectFieldError(await refusedWithoutWrites(send({ resources: {} })), 'body.resources');
      const { kind: _kind, ...noKind } = scanned('node-a', 'node');
      expectFieldError(await refusedWithoutWrites(send({ resources: [noKind] })), 'body.resources[0].kind');
      expectFieldError(
        await refusedWithoutWrites(send({ resources: [scanned('x', 'node'), scanned('x', 'node')] })),
        'body.resources[1].identifier',
        'duplicate',
      );
      expectFieldError(
        await refusedWithoutWrites(
          send({ resources: [{ ...scanned('x', 'node'), createdAt: 'yesterday' }] }),
        ),
        'body.resources[0].createdAt',
      );
      const tooMany = Array.from({ length: 100_001 }, (_, i) => ({
        identifier: `n${i}`,
        name: 'n',
        kind: 'k',
        version: '1',
      }));
      expectFieldError(await refusedWithoutWrites(send({ resources: tooMany })), 'body.resources');
    });

    it('keeps the set atomic: a resource refused in the store leaves every other one as it was', async () => {
      const res = await refusedWithoutWrites(() =>
        set(ids.scanner!, [
          scanned('brand-new', 'node'),
          {
            ...scanned('node-a', 'node'),
            variables: [{ key: 'secret', value: { sensitive: true }, sensitive: true }],
          } as never,
        ]),
      );
      expectFieldError(res, 'body.resources[1].variables[0].value', 'no stored value');
    });

    it('answers 404 for an unknown provider id and 400 for one that is not a UUID', async () => {
      expectProblem(
        await refusedWithoutWrites(() => set(randomUUID(), [scanned('x', 'node')])),
        404,
        'not_found',
      );
      expectFieldError(await refusedWithoutWrites(() => set('k8s-scanner', [])), 'path.providerId');
    });
  });

  describe('delete by name', () => {
    it('refuses to delete a provider that owns resources (400 provider_in_use), changing nothing', async () => {
      const res = await refusedWithoutWrites(() => stack.http.delete(byName('k8s-scanner')).set(stack.auth));
      expectProblem(res, 400, 'provider_in_use');
      expect(res.body.detail).toMatch(/owns 5 resource/);
    });

    it('deletes it (202) once an empty set has deleted its resources and their targets', async () => {
      expect((await set(ids.scanner!, []).expect(202)).body).toMatchObject({ deleted: 5 });
      expect(await liveResources()).toEqual({});
      expect(await targets()).toEqual([]);
      const res = await stack.http.delete(byName('k8s-scanner')).set(stack.auth).expect(202);
      expect(res.body).toMatchObject({ id: ids.scanner, name: 'k8s-scanner' });
      await stack.http.get(byName('k8s-scanner')).set(stack.auth).expect(404);
      // Its deleted resources stay readable by id, no longer naming it.
      const nodeA = await stack.http.get(`${ws()}/resources/${ids['node-a']}`).set(stack.auth).expect(200);
      expect(nodeA.body).toMatchObject({ deletedAt: expect.any(String) });
      expect(nodeA.body).not.toHaveProperty('providerId');
      expectProblem(await stack.http.delete(byName('k8s-scanner')).set(stack.auth), 404, 'not_found');
    });
  });
});
