import { randomUUID } from 'node:crypto';
import { serverFreeApp, type ServerFreeApp } from './serverFreeApp';

/**
 * The routes every workspace record shares (api/routes/records.ts) and the resources' own, through
 * the real app with fake stores: status codes, validation answers, what each answer shows.
 */
describe('records routes (no servers)', () => {
  let api: ServerFreeApp;
  const base = () => `/v1/workspaces/${api.workspaceId}`;

  beforeEach(() => {
    api = serverFreeApp();
  });

  describe('systems', () => {
    it('creates with POST (202, the record and its message), reads it back and lists it', async () => {
      const created = await api.http
        .post(`${base()}/systems`)
        .set(api.operator)
        .send({ name: 'Payments', metadata: { team: 'core' } })
        .expect(202);
      expect(created.body).toMatchObject({
        workspaceId: api.workspaceId,
        name: 'Payments',
        slug: 'payments',
        metadata: { team: 'core' },
        message: 'System created',
      });
      expect(created.body).not.toHaveProperty('description');

      const read = await api.http.get(`${base()}/systems/${created.body.id}`).set(api.operator).expect(200);
      expect(read.body).toMatchObject({
        id: created.body.id,
        name: 'Payments',
        deployments: [],
        environments: [],
      });
      expect(read.body).not.toHaveProperty('message');

      const list = await api.http.get(`${base()}/systems?limit=10`).set(api.operator).expect(200);
      expect(list.body).toMatchObject({ total: 1, limit: 10, offset: 0 });
      expect(list.body.items.map((item: { id: string }) => item.id)).toEqual([created.body.id]);
    });

    it('creates, then replaces, with PUT at a chosen id (202 both times, saying which)', async () => {
      const id = randomUUID();
      const first = await api.http
        .put(`${base()}/systems/${id}`)
        .set(api.operator)
        .send({ name: 'Web' })
        .expect(202);
      expect(first.body).toMatchObject({ id, name: 'Web', message: 'System created' });
      const second = await api.http
        .put(`${base()}/systems/${id}`)
        .set(api.operator)
        .send({ name: 'Web', description: 'storefront' })
        .expect(202);
      expect(second.body).toMatchObject({ id, description: 'storefront', message: 'System updated' });
    });

    it('records each write in the audit trail as the caller, with the fields it sent', async () => {
      const created = await api.http
        .post(`${base()}/systems`)
        .set(api.operator)
        .send({ name: 'Payments' })
        .expect(202);
      await api.http.delete(`${base()}/systems/${created.body.id}`).set(api.operator).expect(202);
      await api.http.get(`${base()}/systems`).set(api.operator).expect(200);
      expect(api.world.audit).toEqual([
        expect.objectContaining({
          workspaceId: api.workspaceId,
          action: 'system.created',
          record: { type: 'system', id: created.body.id },
          changes: ['name'],
          actor: expect.objectContaining({ type: 'key', name: 'operator key' }),
        }),
        expect.objectContaining({
          action: 'system.deleted',
          record: { type: 'system', id: created.body.id },
        }),
      ]);
    });

    it('answers 409 problem+json for a duplicate slug, naming it', async () => {
      await api.http.post(`${base()}/systems`).set(api.operator).send({ name: 'Payments' }).expect(202);
      const res = await api.http
        .post(`${base()}/systems`)
        .set(api.operator)
        .send({ name: 'Other', slug: 'payments' })
        .expect(409);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 409, title: 'Conflict', code: 'duplicate' });
      expect(res.body.detail).toContain('payments');
    });

    it('deletes (202 with its id and message), then answers 404 for it', async () => {
      const created = await api.http
        .post(`${base()}/systems`)
        .set(api.operator)
        .send({ name: 'Payments' })
        .expect(202);
      const deleted = await api.http
        .delete(`${base()}/systems/${created.body.id}`)
        .set(api.operator)
        .expect(202);
      expect(deleted.body).toEqual({ id: created.body.id, message: 'System deleted' });
      const gone = await api.http.get(`${base()}/systems/${created.body.id}`).set(api.operator).expect(404);
      expect(gone.body).toMatchObject({
        status: 404,
        code: 'not_found',
        instance: `${base()}/systems/${created.body.id}`,
      });
    });

    it.each([
      ['a missing name', {}, [{ path: 'body.name', message: expect.any(String) }]],
      ['a name of the wrong type', { name: 7 }, [{ path: 'body.name', message: expect.any(String) }]],
      [
        'a field no system has',
        { name: 'Web', owner: 'me' },
        [{ path: 'body.owner', message: 'unknown field' }],
      ],
      [
        'metadata that is not strings',
        { name: 'Web', metadata: { tier: 1 } },
        [{ path: 'body.metadata.tier', message: expect.any(String) }],
      ],
    ])('answers 400 problem+json for %s, naming each field', async (_, body, errors) => {
      const res = await api.http.post(`${base()}/systems`).set(api.operator).send(body).expect(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({
        type: 'urn:flightdeck:problem:validation_failed',
        status: 400,
        title: 'Bad Request',
      });
      expect(res.body.errors).toEqual(errors);
      expect(api.world.audit).toEqual([]);
    });

    it('answers 400 for an id that is not a UUID and for a page out of bounds', async () => {
      const badId = await api.http.get(`${base()}/systems/not-a-uuid`).set(api.operator).expect(400);
      expect(badId.body.errors).toEqual([{ path: 'path.systemId', message: expect.any(String) }]);
      const badPage = await api.http.get(`${base()}/systems?limit=0&offset=-1`).set(api.operator).expect(400);
      expect(badPage.body.errors.map((error: { path: string }) => error.path).sort()).toEqual([
        'query.limit',
        'query.offset',
      ]);
    });

    it('links an environment (202), whose record then names the system', async () => {
      const system = await api.http
        .post(`${base()}/systems`)
        .set(api.operator)
        .send({ name: 'Web' })
        .expect(202);
      const environment = await api.http
        .post(`${base()}/environments`)
        .set(api.operator)
        .send({ name: 'production' })
        .expect(202);
      const link = `${base()}/systems/${system.body.id}/environments/${environment.body.id}`;
      const linked = await api.http.put(link).set(api.operator).expect(202);
      expect(linked.body).toMatchObject({ id: system.body.id, environmentId: environment.body.id });
      const read = await api.http
        .get(`${base()}/environments/${environment.body.id}`)
        .set(api.operator)
        .expect(200);
      expect(read.body).toMatchObject({
        systemIds: [system.body.id],
        systems: [{ id: system.body.id, name: 'Web' }],
      });
    });
  });

  describe('environments', () => {
    it('refuses a resource selector that is not CEL over resource (400, naming the field)', async () => {
      const res = await api.http
        .post(`${base()}/environments`)
        .set(api.operator)
        .send({ name: 'production', resourceSelector: 'deployment.name == "web"' })
        .expect(400);
      expect(res.body.errors).toEqual([{ path: 'body.resourceSelector', message: expect.any(String) }]);
    });

    it('shows a warning beside a selector that turned out slow, and none beside the others', async () => {
      const slow = 'resource.name.endsWith("-eu")';
      api.world.slowSelectors.add(slow);
      const flagged = await api.http
        .post(`${base()}/environments`)
        .set(api.operator)
        .send({ name: 'eu', resourceSelector: slow })
        .expect(202);
      expect(flagged.body.selectorWarnings).toEqual([expect.objectContaining({ path: 'resourceSelector' })]);
      const plain = await api.http
        .post(`${base()}/environments`)
        .set(api.operator)
        .send({ name: 'us', resourceSelector: 'resource.kind == "service"' })
        .expect(202);
      expect(plain.body).not.toHaveProperty('selectorWarnings');
    });
  });

  describe('deployments', () => {
    it('creates one and answers its detail with systems and variables', async () => {
      const created = await api.http
        .post(`${base()}/deployments`)
        .set(api.operator)
        .send({ name: 'Web', slug: 'web', jobAgents: [] })
        .expect(202);
      expect(created.body).toMatchObject({
        name: 'Web',
        slug: 'web',
        systemIds: [],
        message: 'Deployment created',
      });
      const read = await api.http
        .get(`${base()}/deployments/${created.body.id}`)
        .set(api.operator)
        .expect(200);
      expect(read.body).toMatchObject({ id: created.body.id, systems: [], variables: [] });
    });

    it('answers 400 for a configuration given without an agent to take it', async () => {
      const res = await api.http
        .post(`${base()}/deployments`)
        .set(api.operator)
        .send({ name: 'Web', slug: 'web', jobAgentConfig: { image: 'web:1' } })
        .expect(400);
      expect(res.body.errors).toEqual([{ path: 'body.jobAgentConfig', message: expect.any(String) }]);
    });
  });

  describe('resources', () => {
    const byIdentifier = (identifier: string) =>
      `${base()}/resources/identifier/${encodeURIComponent(identifier)}`;
    const resource = { name: 'web-eu-1', version: 'v1', kind: 'service', config: { replicas: 2 } };

    it('upserts by identifier (202, created then updated) and reads it back by identifier and by id', async () => {
      const created = await api.http
        .put(byIdentifier('web/eu/1'))
        .set(api.operator)
        .send(resource)
        .expect(202);
      expect(created.body).toMatchObject({
        identifier: 'web/eu/1',
        name: 'web-eu-1',
        config: { replicas: 2 },
        deletedAt: null,
        variables: {},
        message: 'Resource created',
      });
      const updated = await api.http
        .put(byIdentifier('web/eu/1'))
        .set(api.operator)
        .send({ ...resource, version: 'v2' })
        .expect(202);
      expect(updated.body).toMatchObject({ id: created.body.id, version: 'v2', message: 'Resource updated' });
      const read = await api.http.get(byIdentifier('web/eu/1')).set(api.operator).expect(200);
      expect(read.body).toMatchObject({ id: created.body.id, version: 'v2' });
      await api.http.get(`${base()}/resources/${created.body.id}`).set(api.operator).expect(200);
    });

    it('deletes by identifier with 200 (Ctrlplane’s) and by id with 202', async () => {
      const first = await api.http.put(byIdentifier('a')).set(api.operator).send(resource).expect(202);
      const second = await api.http.put(byIdentifier('b')).set(api.operator).send(resource).expect(202);
      const byName = await api.http.delete(byIdentifier('a')).set(api.operator).expect(200);
      expect(byName.body).toEqual({ id: first.body.id, message: 'Resource deleted' });
      const byId = await api.http
        .delete(`${base()}/resources/${second.body.id}`)
        .set(api.operator)
        .expect(202);
      expect(byId.body).toEqual({ id: second.body.id, message: 'Resource deleted' });
      await api.http.get(byIdentifier('a')).set(api.operator).expect(404);
    });

    it('answers 400 for a resource without its kind, and for a page of the list out of bounds', async () => {
      const { kind: _kind, ...withoutKind } = resource;
      const res = await api.http.put(byIdentifier('a')).set(api.operator).send(withoutKind).expect(400);
      expect(res.body.errors).toEqual([{ path: 'body.kind', message: expect.any(String) }]);
      const page = await api.http.get(`${base()}/resources?limit=1001`).set(api.operator).expect(400);
      expect(page.body.errors).toEqual([{ path: 'query.limit', message: expect.any(String) }]);
    });

    it('refuses to move a resource to another workspace through PATCH (400), before calling the store', async () => {
      const res = await api.http
        .patch(`/v1/resources/${randomUUID()}`)
        .set(api.operator)
        .send({ workspaceId: api.otherWorkspaceId, name: 'moved' })
        .expect(400);
      expect(res.body.errors).toEqual([{ path: 'body.workspaceId', message: expect.any(String) }]);
    });
  });
});
