import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  createOtherWorkspace,
  expectFieldError,
  expectNothingWritten,
  withoutMessage,
  type WorkspaceAccess,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const REDACTED = { sensitive: true };

/** Every table these endpoints write to; a refused request must leave all of them as they were. */
const WATCHED_TABLES = [
  'resource',
  'resource_variable',
  'release_target',
  'job_agent',
  'deployment',
  'deployment_variable',
  'deployment_variable_value',
  'policy',
  'outbox',
] as const;

describe('resources, job agents, variables and policies over HTTP', () => {
  let stack: TestStack;
  let other: WorkspaceAccess;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const otherWs = () => `/v1/workspaces/${other.id}`;

  async function query<T extends object>(sql: string, params: unknown[] = []): Promise<T[]> {
    return stack.orm.em.fork().getConnection().execute<T[]>(sql, params);
  }

  /** Sends a request that must be refused, and checks that no watched table changed. */
  async function refusedWithoutWrites(send: () => PromiseLike<Response>): Promise<Response> {
    const res = await expectNothingWritten(stack, WATCHED_TABLES, send);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    return res;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    other = await createOtherWorkspace(stack);
  });
  afterAll(() => stack.close());

  describe('resources', () => {
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
      expect(databases.body).toEqual({ items: [databaseRecord], total: 1, limit: 50, offset: 0 });

      const prodPage = await stack.http
        .get(`${ws()}/resources`)
        .query({ cel: 'resource.metadata["env"] == "prod"', limit: 1, offset: 1 })
        .set(stack.auth)
        .expect(200);
      expect(prodPage.body).toEqual({ items: [databaseRecord], total: 2, limit: 1, offset: 1 });
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

    it('answers 401 without a key, and writes nothing', async () => {
      for (const send of [
        () => stack.http.get(`${ws()}/resources`),
        () => stack.http.put(byIdentifier('prod/anonymous')).send({ name: 'x', version: 'v1', kind: 'k' }),
        () => stack.http.patch(patchPath(api.id)).send({ name: 'Anonymous' }),
        () => stack.http.delete(byId(api.id)),
      ]) {
        const res = await refusedWithoutWrites(send);
        expect(res.status).toBe(401);
        expect(res.body.code).toBe('unauthenticated');
      }
    });

    it("answers 404 for another workspace's resource, and writes nothing", async () => {
      const foreign = await stack.http
        .put(byIdentifier('shared/api', otherWs()))
        .set(other.auth)
        .send({ name: 'Theirs', version: 'v1', kind: 'service' })
        .expect(202);
      for (const send of [
        () => stack.http.get(byId(foreign.body.id)).set(stack.auth),
        () => stack.http.get(byIdentifier('shared/api')).set(stack.auth),
        () => stack.http.get(byId(foreign.body.id, otherWs())).set(stack.auth),
        () => stack.http.patch(patchPath(foreign.body.id)).set(stack.auth).send({ name: 'Taken over' }),
        () => stack.http.delete(byId(foreign.body.id)).set(stack.auth),
        () => stack.http.delete(byIdentifier('shared/api')).set(stack.auth),
        () =>
          stack.http
            .put(byIdentifier('shared/api', otherWs()))
            .set(stack.auth)
            .send({ name: 'x', version: 'v1', kind: 'k' }),
      ]) {
        const res = await refusedWithoutWrites(send);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
      const theirs = await stack.http.get(byId(foreign.body.id, otherWs())).set(other.auth).expect(200);
      expect(theirs.body.name).toBe('Theirs');
    });

    it('answers 409 when a PATCH gives a resource the identifier of another live resource, and writes nothing', async () => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .patch(patchPath(databaseId))
          .set(stack.auth)
          .send({ identifier: 'prod/api', name: 'Clash' }),
      );
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('duplicate');
    });

    it('deletes by id and by identifier with 202; the record stays readable by id with deletedAt set', async () => {
      const live = (await stack.http.get(byId(api.id)).set(stack.auth).expect(200)).body;
      const deletedById = await stack.http.delete(byId(databaseId)).set(stack.auth).expect(202);
      expect(deletedById.body).toEqual({ id: databaseId, message: 'Resource deleted' });
      const deletedByIdentifier = await stack.http
        .delete(byIdentifier('prod/api'))
        .set(stack.auth)
        .expect(202);
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
      expect(res.body).not.toHaveProperty('deletedAt');
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

  describe('job agents', () => {
    const agentPath = (id: string, base = ws()) => `${base}/job-agents/${id}`;

    async function storedConfig(id: string): Promise<Record<string, unknown>> {
      const [row] = await query<{ config: Record<string, unknown> }>(
        'SELECT config FROM job_agent WHERE id = ?',
        [id],
      );
      return row!.config;
    }

    const agentCases = [
      {
        type: 'http-pull',
        config: { leaseSeconds: 30, enforceClaimId: true },
        shown: { leaseSeconds: 30, enforceClaimId: true },
      },
      {
        type: 'github-app',
        config: {
          owner: 'acme',
          repo: 'deploys',
          workflow_id: 1234,
          installation_id: 42,
          app_id: 7,
          private_key: '-----BEGIN PRIVATE KEY-----abc',
        },
        shown: {
          owner: 'acme',
          repo: 'deploys',
          workflow_id: 1234,
          ref: 'main',
          installation_id: 42,
          app_id: 7,
          private_key: REDACTED,
        },
        secret: { key: 'private_key', plaintext: '-----BEGIN PRIVATE KEY-----abc' },
      },
      {
        type: 'argo-cd',
        config: {
          template: 'kind: Application',
          server_url: 'https://argo.example.com',
          api_key: 'argo-secret',
        },
        shown: { template: 'kind: Application', server_url: 'https://argo.example.com', api_key: REDACTED },
        secret: { key: 'api_key', plaintext: 'argo-secret' },
      },
      {
        type: 'tfe',
        config: {
          organization: 'acme',
          template: 'workspace-template',
          address: 'https://app.terraform.io',
          token: 'tfe-token',
        },
        shown: {
          organization: 'acme',
          template: 'workspace-template',
          address: 'https://app.terraform.io',
          token: REDACTED,
        },
        secret: { key: 'token', plaintext: 'tfe-token' },
      },
      {
        type: 'test-runner',
        config: {},
        shown: { status: 'successful', delaySeconds: 0 },
      },
    ];
    const agentIds: Record<string, string> = {};

    it.each(agentCases)(
      'creates a $type agent, replaces it (202 both), and never returns its secrets',
      async ({ type, config, shown, secret }) => {
        const id = randomUUID();
        agentIds[type] = id;
        const name = `${type} agent`;
        const created = await stack.http
          .put(agentPath(id))
          .set(stack.auth)
          .send({ name, type, config })
          .expect(202);
        expect(created.body).toEqual({
          id,
          workspaceId: stack.workspaceId,
          name,
          type,
          config: shown,
          metadata: {},
          createdAt: expect.stringMatching(ISO_TIMESTAMP),
          updatedAt: expect.stringMatching(ISO_TIMESTAMP),
          message: 'Job agent created',
        });

        if (secret) {
          const stored = await storedConfig(id);
          expect(stored[secret.key]).toEqual(expect.stringMatching(/^fd2:/));
          expect(
            stack.secrets.forRecord(stack.workspaceId, 'job_agent', id).open(stored[secret.key] as string),
          ).toBe(secret.plaintext);
          expect(JSON.stringify(created.body)).not.toContain(secret.plaintext);
        }

        const replaced = await stack.http
          .put(agentPath(id))
          .set(stack.auth)
          .send({ name, type, config, metadata: { team: 'platform' } })
          .expect(202);
        expect(replaced.body).toEqual({
          ...created.body,
          metadata: { team: 'platform' },
          updatedAt: expect.stringMatching(ISO_TIMESTAMP),
          message: 'Job agent updated',
        });
        const read = await stack.http.get(agentPath(id)).set(stack.auth).expect(200);
        expect(read.body).toEqual(withoutMessage(replaced.body));
      },
    );

    it('keeps the stored secret when {"sensitive": true} is sent back, and replaces it when a new one is sent', async () => {
      const id = agentIds['argo-cd']!;
      const sealedBefore = (await storedConfig(id)).api_key;
      const kept = await stack.http
        .put(agentPath(id))
        .set(stack.auth)
        .send({
          name: 'argo-cd agent',
          type: 'argo-cd',
          config: { server_url: 'https://argo.example.com', api_key: REDACTED },
        })
        .expect(202);
      expect(kept.body.config).toEqual({ server_url: 'https://argo.example.com', api_key: REDACTED });
      expect(await storedConfig(id)).toEqual({
        server_url: 'https://argo.example.com',
        api_key: sealedBefore,
      });

      await stack.http
        .put(agentPath(id))
        .set(stack.auth)
        .send({ name: 'argo-cd agent', type: 'argo-cd', config: { api_key: 'rotated-secret' } })
        .expect(202);
      const rotated = await storedConfig(id);
      expect(rotated.api_key).not.toBe(sealedBefore);
      expect(
        stack.secrets.forRecord(stack.workspaceId, 'job_agent', id).open(rotated.api_key as string),
      ).toBe('rotated-secret');
    });

    it('refuses {"sensitive": true} when no secret is stored, and writes nothing', async () => {
      const fresh = await refusedWithoutWrites(() =>
        stack.http
          .put(agentPath(randomUUID()))
          .set(stack.auth)
          .send({ name: 'fresh tfe', type: 'tfe', config: { token: REDACTED } }),
      );
      expectFieldError(fresh, 'body.config.token');

      const existingWithoutToken = await refusedWithoutWrites(() =>
        stack.http
          .put(agentPath(agentIds['github-app']!))
          .set(stack.auth)
          .send({
            name: 'github-app agent',
            type: 'github-app',
            config: { private_key: REDACTED, token: REDACTED },
          }),
      );
      expectFieldError(existingWithoutToken, 'body.config.token');
    });

    it.each([
      [
        'a negative github-app workflow_id',
        { type: 'github-app', config: { workflow_id: -1 } },
        'body.config.workflow_id',
      ],
      [
        'an unknown config key',
        { type: 'argo-cd', config: { server_url: 'https://a.example.com', namespace: 'x' } },
        'body.config.namespace',
      ],
      ['an unknown type', { type: 'jenkins', config: {} }, 'body.type'],
      [
        'a lease shorter than 5 seconds',
        { type: 'http-pull', config: { leaseSeconds: 1 } },
        'body.config.leaseSeconds',
      ],
      [
        'a server_url that is not a URL',
        { type: 'argo-cd', config: { server_url: 'argo' } },
        'body.config.server_url',
      ],
      ['an empty secret', { type: 'tfe', config: { token: '' } }, 'body.config.token'],
      [
        'a test-runner status that does not exist',
        { type: 'test-runner', config: { status: 'done' } },
        'body.config.status',
      ],
    ])('answers 400 for %s with its field path, and writes nothing', async (_, body, path) => {
      const id = randomUUID();
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(agentPath(id))
          .set(stack.auth)
          .send({ name: 'invalid agent', ...body }),
      );
      expectFieldError(res, path);
      await stack.http.get(agentPath(id)).set(stack.auth).expect(404);
    });

    it('names the unknown config key in the path', async () => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(agentPath(randomUUID()))
          .set(stack.auth)
          .send({ name: 'typo agent', type: 'tfe', config: { organisation: 'acme' } }),
      );
      expectFieldError(res, 'body.config.organisation', 'unknown field');
    });

    it('lists the agents oldest first with their secrets redacted', async () => {
      const res = await stack.http.get(`${ws()}/job-agents`).set(stack.auth).expect(200);
      expect(res.body).toMatchObject({ total: agentCases.length, limit: 50, offset: 0 });
      expect(res.body.items.map((agent: { id: string }) => agent.id)).toEqual(
        agentCases.map(({ type }) => agentIds[type]),
      );
      const text = JSON.stringify(res.body);
      expect(text).not.toContain('fd1:');
      for (const plaintext of ['argo-secret', 'rotated-secret', 'tfe-token', 'BEGIN PRIVATE KEY']) {
        expect(text).not.toContain(plaintext);
      }
      const [stored] = await query<{ count: number }>(
        'SELECT count(*)::int AS count FROM job_agent WHERE workspace_id = ?',
        [stack.workspaceId],
      );
      expect(stored!.count).toBe(agentCases.length);
    });

    it('answers 409 for a duplicate name, on create and on rename, and writes nothing', async () => {
      for (const id of [randomUUID(), agentIds['tfe']!]) {
        const res = await refusedWithoutWrites(() =>
          stack.http
            .put(agentPath(id))
            .set(stack.auth)
            .send({ name: 'http-pull agent', type: 'tfe', config: {} }),
        );
        expect(res.status).toBe(409);
        expect(res.body.code).toBe('duplicate');
      }
    });

    it('accepts the same name in another workspace', async () => {
      const res = await stack.http
        .put(agentPath(randomUUID(), otherWs()))
        .set(other.auth)
        .send({ name: 'http-pull agent', type: 'http-pull' })
        .expect(202);
      expect(res.body).toMatchObject({ workspaceId: other.id, name: 'http-pull agent', config: {} });
    });

    it('answers 401 without a key, and writes nothing', async () => {
      for (const send of [
        () => stack.http.get(`${ws()}/job-agents`),
        () => stack.http.get(agentPath(agentIds['tfe']!)),
        () => stack.http.put(agentPath(randomUUID())).send({ name: 'anonymous', type: 'http-pull' }),
        () => stack.http.delete(agentPath(agentIds['tfe']!)),
      ]) {
        expect((await refusedWithoutWrites(send)).status).toBe(401);
      }
    });

    it("answers 404 for another workspace's agent, and writes nothing", async () => {
      const foreignId = randomUUID();
      await stack.http
        .put(agentPath(foreignId, otherWs()))
        .set(other.auth)
        .send({ name: 'their tfe', type: 'tfe', config: { token: 'their-token' } })
        .expect(202);
      for (const send of [
        () => stack.http.get(agentPath(foreignId)).set(stack.auth),
        () => stack.http.get(agentPath(foreignId, otherWs())).set(stack.auth),
        () =>
          stack.http
            .put(agentPath(foreignId))
            .set(stack.auth)
            .send({ name: 'stolen', type: 'tfe', config: { token: REDACTED } }),
        () => stack.http.delete(agentPath(foreignId)).set(stack.auth),
      ]) {
        const res = await refusedWithoutWrites(send);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
    });

    it('deletes an agent with 202', async () => {
      const id = agentIds['test-runner']!;
      const res = await stack.http.delete(agentPath(id)).set(stack.auth).expect(202);
      expect(res.body).toEqual({ id, message: 'Job agent deleted' });
      await stack.http.get(agentPath(id)).set(stack.auth).expect(404);
      const list = await stack.http.get(`${ws()}/job-agents`).set(stack.auth).expect(200);
      expect(list.body.total).toBe(agentCases.length - 1);
      expect(list.body.items.map((agent: { id: string }) => agent.id)).not.toContain(id);
      expect(
        (await refusedWithoutWrites(() => stack.http.delete(agentPath(id)).set(stack.auth))).status,
      ).toBe(404);
    });
  });

  describe('deployment variables', () => {
    let checkoutId: string;
    let billingId: string;
    const logLevelId = randomUUID();
    const apiTokenId = randomUUID();
    const valueIds = {
      qa: randomUUID(),
      fallback: randomUUID(),
      reference: randomUUID(),
      token: randomUUID(),
    };
    const variablesOf = (deploymentId: string, base = ws()) =>
      `${base}/deployments/${deploymentId}/variables`;
    const variablePath = (deploymentId: string, variableId: string, base = ws()) =>
      `${variablesOf(deploymentId, base)}/${variableId}`;
    const valuePath = (deploymentId: string, variableId: string, valueId: string, base = ws()) =>
      `${variablePath(deploymentId, variableId, base)}/values/${valueId}`;
    const values: Record<string, Record<string, unknown>> = {};
    let logLevel: Record<string, unknown>;

    async function createDeployment(
      base: string,
      auth: { 'x-api-key': string },
      name: string,
    ): Promise<string> {
      const res = await stack.http
        .post(`${base}/deployments`)
        .set(auth)
        .send({ name, slug: name.toLowerCase() })
        .expect(202);
      return res.body.id;
    }

    beforeAll(async () => {
      checkoutId = await createDeployment(ws(), stack.auth, 'Checkout');
      billingId = await createDeployment(ws(), stack.auth, 'Billing');
    });

    it('creates a variable from default_value and replaces it from defaultValue (202 both)', async () => {
      const created = await stack.http
        .put(variablePath(checkoutId, logLevelId))
        .set(stack.auth)
        .send({ key: 'LOG_LEVEL', description: 'How loud', default_value: 'info' })
        .expect(202);
      expect(created.body).toEqual({
        id: logLevelId,
        deploymentId: checkoutId,
        key: 'LOG_LEVEL',
        description: 'How loud',
        defaultValue: 'info',
        sensitive: false,
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Variable created',
      });

      const replaced = await stack.http
        .put(variablePath(checkoutId, logLevelId))
        .set(stack.auth)
        .send({ key: 'LOG_LEVEL', description: 'How loud the service logs', defaultValue: 'warn' })
        .expect(202);
      expect(replaced.body).toEqual({
        ...created.body,
        description: 'How loud the service logs',
        defaultValue: 'warn',
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Variable updated',
      });
      logLevel = withoutMessage(replaced.body);
      expect(
        await query('SELECT default_value, sensitive FROM deployment_variable WHERE id = ?', [logLevelId]),
      ).toEqual([{ default_value: 'warn', sensitive: false }]);
    });

    it('creates literal, reference and selector-scoped values and replaces one (202 each)', async () => {
      const qa = await stack.http
        .put(valuePath(checkoutId, logLevelId, valueIds.qa))
        .set(stack.auth)
        .send({ priority: 10, value: 'debug', resource_selector: 'resource.metadata["env"] == "qa"' })
        .expect(202);
      expect(qa.body).toEqual({
        id: valueIds.qa,
        deploymentVariableId: logLevelId,
        priority: 10,
        value: 'debug',
        resourceSelector: 'resource.metadata["env"] == "qa"',
        sensitive: false,
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Variable value created',
      });

      const fallback = await stack.http
        .put(valuePath(checkoutId, logLevelId, valueIds.fallback))
        .set(stack.auth)
        .send({ priority: 5, literal_value: 'error' })
        .expect(202);
      expect(fallback.body).toEqual({
        id: valueIds.fallback,
        deploymentVariableId: logLevelId,
        priority: 5,
        value: 'error',
        sensitive: false,
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Variable value created',
      });
      values.fallback = withoutMessage(fallback.body);

      const reference = await stack.http
        .put(valuePath(checkoutId, logLevelId, valueIds.reference))
        .set(stack.auth)
        .send({
          priority: 1,
          reference_value: { reference: 'resource', path: ['metadata', 'log-level'] },
          resourceSelector: 'resource.kind == "service"',
        })
        .expect(202);
      expect(reference.body).toEqual({
        id: valueIds.reference,
        deploymentVariableId: logLevelId,
        priority: 1,
        referenceValue: { reference: 'resource', path: ['metadata', 'log-level'] },
        resourceSelector: 'resource.kind == "service"',
        sensitive: false,
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Variable value created',
      });
      expect(reference.body).not.toHaveProperty('value');
      values.reference = withoutMessage(reference.body);

      const replaced = await stack.http
        .put(valuePath(checkoutId, logLevelId, valueIds.qa))
        .set(stack.auth)
        .send({ priority: 20, value: { level: 'trace', json: true } })
        .expect(202);
      // The replacement names no selector, so the value no longer has one.
      const { resourceSelector: _qaSelector, ...qaWithoutSelector } = qa.body;
      expect(replaced.body).toEqual({
        ...qaWithoutSelector,
        priority: 20,
        value: { level: 'trace', json: true },
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Variable value updated',
      });
      expect(replaced.body).not.toHaveProperty('resourceSelector');
      values.qa = withoutMessage(replaced.body);

      const read = await stack.http
        .get(valuePath(checkoutId, logLevelId, valueIds.qa))
        .set(stack.auth)
        .expect(200);
      expect(read.body).toEqual(values.qa);
    });

    it('refuses a null literal value with 400 and writes nothing', async () => {
      const searchId = await createDeployment(ws(), stack.auth, 'Search');
      const variableId = randomUUID();
      await stack.http
        .put(variablePath(searchId, variableId))
        .set(stack.auth)
        .send({ key: 'OPTIONAL_FLAG' })
        .expect(202);
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(valuePath(searchId, variableId, randomUUID()))
          .set(stack.auth)
          .send({ priority: 1, value: null })
          .expect(400),
      );
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('body.value');
    });

    it('reads a variable with its values, highest priority first', async () => {
      const res = await stack.http.get(variablePath(checkoutId, logLevelId)).set(stack.auth).expect(200);
      expect(res.body).toEqual({
        variable: logLevel,
        values: [values.qa, values.fallback, values.reference],
      });
    });

    it('seals a sensitive default and value, shows them as {"sensitive": true}, and keeps them on the marker', async () => {
      const checkoutSecrets = () => stack.secrets.forRecord(stack.workspaceId, 'deployment', checkoutId);
      const variable = await stack.http
        .put(variablePath(checkoutId, apiTokenId))
        .set(stack.auth)
        .send({ key: 'API_TOKEN', default_value: 'default-secret', sensitive: true })
        .expect(202);
      expect(variable.body).toMatchObject({ key: 'API_TOKEN', defaultValue: REDACTED, sensitive: true });
      const [storedVariable] = await query<{ default_value: string }>(
        'SELECT default_value FROM deployment_variable WHERE id = ?',
        [apiTokenId],
      );
      expect(storedVariable!.default_value).toMatch(/^fd2:/);
      expect(checkoutSecrets().openJson(storedVariable!.default_value)).toBe('default-secret');

      const value = await stack.http
        .put(valuePath(checkoutId, apiTokenId, valueIds.token))
        .set(stack.auth)
        .send({ priority: 1, value: 'value-secret' })
        .expect(202);
      expect(value.body).toMatchObject({ value: REDACTED, sensitive: true });
      const sealedValue = async () =>
        (
          await query<{ value: string }>('SELECT value FROM deployment_variable_value WHERE id = ?', [
            valueIds.token,
          ])
        )[0]!.value;
      const sealed = await sealedValue();
      expect(sealed).toMatch(/^fd2:/);
      expect(checkoutSecrets().openJson(sealed)).toBe('value-secret');

      const keptValue = await stack.http
        .put(valuePath(checkoutId, apiTokenId, valueIds.token))
        .set(stack.auth)
        .send({ priority: 3, value: REDACTED, sensitive: true })
        .expect(202);
      expect(keptValue.body).toMatchObject({ priority: 3, value: REDACTED, sensitive: true });
      expect(await sealedValue()).toBe(sealed);

      const keptDefault = await stack.http
        .put(variablePath(checkoutId, apiTokenId))
        .set(stack.auth)
        .send({
          key: 'API_TOKEN',
          description: 'Token for the payment API',
          defaultValue: REDACTED,
          sensitive: true,
        })
        .expect(202);
      expect(keptDefault.body).toMatchObject({
        defaultValue: REDACTED,
        description: 'Token for the payment API',
      });
      expect(await query('SELECT default_value FROM deployment_variable WHERE id = ?', [apiTokenId])).toEqual(
        [{ default_value: storedVariable!.default_value }],
      );

      const text = JSON.stringify(
        (await stack.http.get(variablePath(checkoutId, apiTokenId)).set(stack.auth).expect(200)).body,
      );
      expect(text).not.toMatch(/default-secret|value-secret|fd1:/);
    });

    it('refuses {"sensitive": true} when nothing is stored, and writes nothing', async () => {
      const value = await refusedWithoutWrites(() =>
        stack.http
          .put(valuePath(checkoutId, apiTokenId, randomUUID()))
          .set(stack.auth)
          .send({ priority: 1, value: REDACTED, sensitive: true }),
      );
      expectFieldError(value, 'body.value');
      const variable = await refusedWithoutWrites(() =>
        stack.http
          .put(variablePath(checkoutId, randomUUID()))
          .set(stack.auth)
          .send({ key: 'NEW_SECRET', defaultValue: REDACTED, sensitive: true }),
      );
      expectFieldError(variable, 'body.defaultValue');
    });

    it('lists the variables of a deployment as a page of {variable, values}, by key', async () => {
      const res = await stack.http.get(variablesOf(checkoutId)).set(stack.auth).expect(200);
      expect(res.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
      expect(res.body.items).toHaveLength(2);
      expect(res.body.items[0]).toEqual({
        variable: expect.objectContaining({ id: apiTokenId, key: 'API_TOKEN' }),
        values: [expect.objectContaining({ id: valueIds.token, value: REDACTED })],
      });
      expect(res.body.items[1]).toEqual({
        variable: logLevel,
        values: [values.qa, values.fallback, values.reference],
      });
      const empty = await stack.http.get(variablesOf(billingId)).set(stack.auth).expect(200);
      expect(empty.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
    });

    it('serves the same records under /deployment-variables and /deployment-variable-values', async () => {
      const regionId = randomUUID();
      const regionValueId = randomUUID();
      const created = await stack.http
        .put(`${ws()}/deployment-variables/${regionId}`)
        .set(stack.auth)
        .send({ deploymentId: billingId, key: 'REGION', defaultValue: 'eu' })
        .expect(202);
      expect(created.body).toMatchObject({
        id: regionId,
        deploymentId: billingId,
        key: 'REGION',
        defaultValue: 'eu',
        message: 'Variable created',
      });
      const variable = withoutMessage(created.body);
      const alias = await stack.http
        .get(`${ws()}/deployment-variables/${regionId}`)
        .set(stack.auth)
        .expect(200);
      expect(alias.body).toEqual({ variable, values: [] });

      const value = await stack.http
        .put(`${ws()}/deployment-variable-values/${regionValueId}`)
        .set(stack.auth)
        .send({ deploymentVariableId: regionId, priority: 2, value: 'us' })
        .expect(202);
      expect(value.body).toMatchObject({
        id: regionValueId,
        deploymentVariableId: regionId,
        priority: 2,
        value: 'us',
        message: 'Variable value created',
      });
      const replaced = await stack.http
        .put(`${ws()}/deployment-variable-values/${regionValueId}`)
        .set(stack.auth)
        .send({ deploymentVariableId: regionId, priority: 4, value: 'ap' })
        .expect(202);
      expect(replaced.body).toMatchObject({ priority: 4, value: 'ap', message: 'Variable value updated' });
      const replacedValue = withoutMessage(replaced.body);

      const viaAlias = await stack.http
        .get(`${ws()}/deployment-variable-values/${regionValueId}`)
        .set(stack.auth)
        .expect(200);
      const viaNested = await stack.http
        .get(valuePath(billingId, regionId, regionValueId))
        .set(stack.auth)
        .expect(200);
      expect(viaAlias.body).toEqual(replacedValue);
      expect(viaNested.body).toEqual(replacedValue);
      const nested = await stack.http.get(variablePath(billingId, regionId)).set(stack.auth).expect(200);
      expect(nested.body).toEqual({ variable, values: [replacedValue] });

      const deletedValue = await stack.http
        .delete(`${ws()}/deployment-variable-values/${regionValueId}`)
        .set(stack.auth)
        .expect(202);
      expect(deletedValue.body).toEqual({ id: regionValueId, message: 'Variable value deleted' });
      await stack.http.get(`${ws()}/deployment-variable-values/${regionValueId}`).set(stack.auth).expect(404);
      const deletedVariable = await stack.http
        .delete(`${ws()}/deployment-variables/${regionId}`)
        .set(stack.auth)
        .expect(202);
      expect(deletedVariable.body).toEqual({ id: regionId, message: 'Variable deleted' });
      await stack.http.get(`${ws()}/deployment-variables/${regionId}`).set(stack.auth).expect(404);
    });

    it.each([
      [
        'both value and reference_value',
        { value: 'x', reference_value: { reference: 'resource', path: ['name'] } },
        'body.reference_value',
      ],
      ['neither value nor reference', { priority: 1 }, 'body.value'],
      [
        'a reference that names neither a record nor a relationship',
        { reference_value: { reference: 'the cluster', path: ['name'] } },
        'body.reference_value.reference',
      ],
      [
        'a reference with an empty path',
        { referenceValue: { reference: 'resource', path: [] } },
        'body.referenceValue.path',
      ],
      ['a fractional priority', { priority: 1.5, value: 'x' }, 'body.priority'],
      ['a sensitive flag that is not a boolean', { value: 'x', sensitive: 'yes' }, 'body.sensitive'],
    ])('answers 400 for a value with %s, with its field path, and writes nothing', async (_, body, path) => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(valuePath(checkoutId, logLevelId, randomUUID()))
          .set(stack.auth)
          .send(body),
      );
      expectFieldError(res, path);
    });

    it.each([
      ['resource_selector', 'resource.knd == "x"', 'invalid CEL: line 1, column 10: No such key: knd'],
      ['resourceSelector', 'resource.kind ==', 'invalid CEL: line 1, column 17: Unexpected token: EOF'],
    ])(
      'answers 400 for a value whose %s is not valid CEL, naming the position',
      async (field, selector, message) => {
        const res = await refusedWithoutWrites(() =>
          stack.http
            .put(valuePath(checkoutId, logLevelId, randomUUID()))
            .set(stack.auth)
            .send({ value: 'x', [field]: selector }),
        );
        expectFieldError(res, `body.${field}`, message);
      },
    );

    it.each([
      ['an empty key', 'nested', { key: '' }, 'body.key'],
      ['a description that is not a string', 'nested', { key: 'K', description: 7 }, 'body.description'],
      ['no deploymentId on the alias', 'alias', { key: 'K' }, 'body.deploymentId'],
      [
        'a deploymentId on the alias that is not a uuid',
        'alias',
        { key: 'K', deploymentId: 'checkout' },
        'body.deploymentId',
      ],
    ] as const)(
      'answers 400 for a variable with %s, with its field path, and writes nothing',
      async (_, form, body, path) => {
        const id = randomUUID();
        const res = await refusedWithoutWrites(() =>
          form === 'nested'
            ? stack.http.put(variablePath(checkoutId, id)).set(stack.auth).send(body)
            : stack.http.put(`${ws()}/deployment-variables/${id}`).set(stack.auth).send(body),
        );
        expectFieldError(res, path);
      },
    );

    it('answers 400 for an alias value without deploymentVariableId, and writes nothing', async () => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(`${ws()}/deployment-variable-values/${randomUUID()}`)
          .set(stack.auth)
          .send({ value: 'x' }),
      );
      expectFieldError(res, 'body.deploymentVariableId');
    });

    it('answers 409 for a duplicate key in one deployment, and writes nothing', async () => {
      const duplicate = await refusedWithoutWrites(() =>
        stack.http.put(variablePath(checkoutId, randomUUID())).set(stack.auth).send({ key: 'LOG_LEVEL' }),
      );
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.code).toBe('duplicate');

      const viaAlias = await refusedWithoutWrites(() =>
        stack.http
          .put(`${ws()}/deployment-variables/${randomUUID()}`)
          .set(stack.auth)
          .send({ deploymentId: checkoutId, key: 'API_TOKEN' }),
      );
      expect(viaAlias.status).toBe(409);

      const moved = await refusedWithoutWrites(() =>
        stack.http.put(variablePath(billingId, logLevelId)).set(stack.auth).send({ key: 'LOG_LEVEL' }),
      );
      expect(moved.status).toBe(409);
      expect(moved.body.code).toBe('wrong_parent');
    });

    it('accepts the same key in another deployment', async () => {
      const res = await stack.http
        .put(variablePath(billingId, randomUUID()))
        .set(stack.auth)
        .send({ key: 'LOG_LEVEL', default_value: 'info' })
        .expect(202);
      expect(res.body).toMatchObject({ deploymentId: billingId, key: 'LOG_LEVEL', defaultValue: 'info' });
    });

    it('answers 401 without a key, and writes nothing', async () => {
      for (const send of [
        () => stack.http.get(variablesOf(checkoutId)),
        () => stack.http.put(variablePath(checkoutId, randomUUID())).send({ key: 'ANONYMOUS' }),
        () => stack.http.put(valuePath(checkoutId, logLevelId, randomUUID())).send({ value: 'x' }),
        () => stack.http.delete(variablePath(checkoutId, logLevelId)),
        () => stack.http.delete(`${ws()}/deployment-variable-values/${valueIds.qa}`),
      ]) {
        expect((await refusedWithoutWrites(send)).status).toBe(401);
      }
    });

    it("answers 404 for another workspace's deployment, variable and value, and writes nothing", async () => {
      const theirDeployment = await createDeployment(otherWs(), other.auth, 'Theirs');
      const theirVariable = randomUUID();
      const theirValue = randomUUID();
      await stack.http
        .put(variablePath(theirDeployment, theirVariable, otherWs()))
        .set(other.auth)
        .send({ key: 'THEIR_KEY', default_value: 'theirs' })
        .expect(202);
      await stack.http
        .put(valuePath(theirDeployment, theirVariable, theirValue, otherWs()))
        .set(other.auth)
        .send({ value: 'theirs' })
        .expect(202);

      for (const send of [
        () => stack.http.get(variablesOf(theirDeployment)).set(stack.auth),
        () => stack.http.get(variablePath(theirDeployment, theirVariable)).set(stack.auth),
        () => stack.http.get(variablePath(checkoutId, theirVariable)).set(stack.auth),
        () => stack.http.get(`${ws()}/deployment-variables/${theirVariable}`).set(stack.auth),
        () => stack.http.get(`${ws()}/deployment-variable-values/${theirValue}`).set(stack.auth),
        () => stack.http.get(valuePath(checkoutId, logLevelId, theirValue)).set(stack.auth),
        () =>
          stack.http.put(variablePath(theirDeployment, randomUUID())).set(stack.auth).send({ key: 'MINE' }),
        () => stack.http.put(variablePath(checkoutId, theirVariable)).set(stack.auth).send({ key: 'MINE' }),
        () =>
          stack.http
            .put(`${ws()}/deployment-variables/${randomUUID()}`)
            .set(stack.auth)
            .send({ deploymentId: theirDeployment, key: 'MINE' }),
        () =>
          stack.http
            .put(`${ws()}/deployment-variable-values/${theirValue}`)
            .set(stack.auth)
            .send({ deploymentVariableId: logLevelId, value: 'mine' }),
        () =>
          stack.http
            .put(`${ws()}/deployment-variable-values/${randomUUID()}`)
            .set(stack.auth)
            .send({ deploymentVariableId: theirVariable, value: 'mine' }),
        () => stack.http.delete(`${ws()}/deployment-variables/${theirVariable}`).set(stack.auth),
        () => stack.http.delete(`${ws()}/deployment-variable-values/${theirValue}`).set(stack.auth),
        () => stack.http.get(variablesOf(theirDeployment, otherWs())).set(stack.auth),
      ]) {
        const res = await refusedWithoutWrites(send);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
    });

    it('deletes a value and a variable with 202, the variable taking its values along', async () => {
      const value = await stack.http
        .delete(valuePath(checkoutId, logLevelId, valueIds.fallback))
        .set(stack.auth)
        .expect(202);
      expect(value.body).toEqual({ id: valueIds.fallback, message: 'Variable value deleted' });
      await stack.http
        .get(valuePath(checkoutId, logLevelId, valueIds.fallback))
        .set(stack.auth)
        .expect(404);

      const variable = await stack.http
        .delete(variablePath(checkoutId, logLevelId))
        .set(stack.auth)
        .expect(202);
      expect(variable.body).toEqual({ id: logLevelId, message: 'Variable deleted' });
      await stack.http.get(variablePath(checkoutId, logLevelId)).set(stack.auth).expect(404);
      expect(
        await query('SELECT id FROM deployment_variable_value WHERE variable_id = ?', [logLevelId]),
      ).toEqual([]);
      const list = await stack.http.get(variablesOf(checkoutId)).set(stack.auth).expect(200);
      expect(list.body.items.map((item: { variable: { key: string } }) => item.variable.key)).toEqual([
        'API_TOKEN',
      ]);
    });
  });

  describe('policies', () => {
    const policiesPath = () => `${ws()}/policies`;
    const policyPath = (id: string, base = ws()) => `${base}/policies/${id}`;
    let gate: Record<string, unknown> & { id: string };
    let window: Record<string, unknown> & { id: string };
    const windowId = randomUUID();
    /** The fields every rule read back has beside its kind. */
    const ruleOf = (policyId?: string) => ({
      id: expect.stringMatching(UUID),
      policyId: policyId ?? expect.stringMatching(UUID),
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
    });

    it('creates a policy with POST (202), with defaults and an id for every rule', async () => {
      const res = await stack.http
        .post(policiesPath())
        .set(stack.auth)
        .send({
          name: 'Production gate',
          rules: [
            { anyApproval: { minApprovals: 2 } },
            { versionSelector: { selector: 'version.tag.startsWith("v1.")' } },
            { environmentProgression: { dependsOnEnvironmentSelector: 'environment.name == "staging"' } },
          ],
        })
        .expect(202);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        workspaceId: stack.workspaceId,
        name: 'Production gate',
        selector: 'true',
        priority: 0,
        enabled: true,
        metadata: {},
        rules: [
          { ...ruleOf(), anyApproval: { minApprovals: 2 } },
          { ...ruleOf(), versionSelector: { selector: 'version.tag.startsWith("v1.")' } },
          {
            ...ruleOf(),
            environmentProgression: {
              dependsOnEnvironmentSelector: 'environment.name == "staging"',
              minimumSoakTimeMinutes: 0,
              successStatuses: ['successful'],
            },
          },
        ],
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      });
      const ruleIds = (res.body.rules as { id: string }[]).map((rule) => rule.id);
      expect(new Set(ruleIds).size).toBe(3);
      expect((res.body.rules as { policyId: string }[]).map((rule) => rule.policyId)).toEqual(
        ruleIds.map(() => res.body.id),
      );
      gate = res.body;

      const read = await stack.http.get(policyPath(gate.id)).set(stack.auth).expect(200);
      expect(read.body).toEqual(gate);
      const [stored] = await query<{ rules: { id: string }[] }>('SELECT rules FROM policy WHERE id = ?', [
        gate.id,
      ]);
      expect(stored!.rules.map((rule) => rule.id)).toEqual(ruleIds);
    });

    it('upserts with PUT (202, created or replaced), keeping rule ids sent back', async () => {
      const weekdays = { rrule: 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR', durationMinutes: 480 };
      const created = await stack.http
        .put(policyPath(windowId))
        .set(stack.auth)
        .send({
          name: 'Weekday window',
          description: 'Deploy to production on weekdays',
          selector: 'environment.name == "production"',
          priority: 10,
          enabled: false,
          metadata: { team: 'sre' },
          rules: [{ deploymentWindow: weekdays }],
        })
        .expect(202);
      expect(created.body).toEqual({
        id: windowId,
        workspaceId: stack.workspaceId,
        name: 'Weekday window',
        description: 'Deploy to production on weekdays',
        selector: 'environment.name == "production"',
        priority: 10,
        enabled: false,
        metadata: { team: 'sre' },
        rules: [
          {
            ...ruleOf(windowId),
            deploymentWindow: { ...weekdays, timezone: 'UTC', allowWindow: true },
          },
        ],
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      });
      const windowRuleId = created.body.rules[0].id as string;

      const replaced = await stack.http
        .put(policyPath(windowId))
        .set(stack.auth)
        .send({
          name: 'Weekday window',
          rules: [
            { id: windowRuleId, deploymentWindow: { ...weekdays, timezone: 'Europe/Berlin' } },
            { retry: { maxRetries: 3 } },
          ],
        })
        .expect(202);
      // The replacement names no description, so the policy no longer has one.
      const { description: _description, ...createdWithoutDescription } = created.body;
      expect(replaced.body).toEqual({
        ...createdWithoutDescription,
        selector: 'true',
        priority: 0,
        enabled: true,
        metadata: {},
        rules: [
          {
            // The rule sent back by id keeps the time it was first written.
            id: windowRuleId,
            policyId: windowId,
            createdAt: created.body.rules[0].createdAt,
            deploymentWindow: { ...weekdays, timezone: 'Europe/Berlin', allowWindow: true },
          },
          { ...ruleOf(windowId), retry: { maxRetries: 3, backoffStrategy: 'linear' } },
        ],
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      });
      expect(replaced.body).not.toHaveProperty('description');
      window = replaced.body;
      expect((await stack.http.get(policyPath(windowId)).set(stack.auth).expect(200)).body).toEqual(window);
    });

    it('lists policies oldest first', async () => {
      const res = await stack.http.get(policiesPath()).set(stack.auth).expect(200);
      expect(res.body).toEqual({ items: [gate, window], total: 2, limit: 50, offset: 0 });
    });

    it.each([
      [
        'an approval rule needing no approvals',
        { rules: [{ anyApproval: { minApprovals: 0 } }] },
        'body.rules[0].anyApproval.minApprovals',
      ],
      [
        'a rule holding two kinds',
        {
          rules: [
            { anyApproval: { minApprovals: 1 } },
            { anyApproval: { minApprovals: 1 }, retry: { maxRetries: 1 } },
          ],
        },
        'body.rules[1]',
      ],
      ['a rule holding no kind', { rules: [{}] }, 'body.rules[0]'],
      ['an unknown rule kind', { rules: [{ manualGate: {} }] }, 'body.rules[0]'],
      [
        'a deployment window that is not an RFC 5545 rule',
        { rules: [{ deploymentWindow: { rrule: 'EVERY MONDAY', durationMinutes: 60 } }] },
        'body.rules[0].deploymentWindow.rrule',
      ],
      [
        'an unknown time zone',
        {
          rules: [
            { deploymentWindow: { rrule: 'FREQ=DAILY', durationMinutes: 60, timezone: 'Mars/Olympus' } },
          ],
        },
        'body.rules[0].deploymentWindow.timezone',
      ],
      ['a priority out of range', { priority: 5000 }, 'body.priority'],
      ['an empty name', { name: '' }, 'body.name'],
    ])('answers 400 for %s, with its field path, and writes nothing', async (_, body, path) => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .post(policiesPath())
          .set(stack.auth)
          .send({ name: 'Invalid', ...body }),
      );
      expectFieldError(res, path);
    });

    it('says which kinds a rule with two kinds holds', async () => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(policyPath(randomUUID()))
          .set(stack.auth)
          .send({
            name: 'Two kinds',
            rules: [{ anyApproval: { minApprovals: 1 }, retry: { maxRetries: 1 } }],
          }),
      );
      expectFieldError(
        res,
        'body.rules[0]',
        'a rule holds exactly one kind, this one has anyApproval and retry',
      );
    });

    it.each([
      [
        'versionSelector.selector',
        { rules: [{ versionSelector: { selector: 'version.tg == "x"' } }] },
        'body.rules[0].versionSelector.selector',
        'invalid CEL: line 1, column 9: No such key: tg',
      ],
      [
        'the policy selector',
        { selector: 'environment.nme == "production"' },
        'body.selector',
        'invalid CEL: line 1, column 13: No such key: nme',
      ],
      [
        'environmentProgression.dependsOnEnvironmentSelector',
        { rules: [{ environmentProgression: { dependsOnEnvironmentSelector: 'environment.name ==' } }] },
        'body.rules[0].environmentProgression.dependsOnEnvironmentSelector',
        /^invalid CEL: line 1, column \d+: /,
      ],
    ])(
      'answers 400 for bad CEL in %s, naming the position, and writes nothing',
      async (_, body, path, message) => {
        const res = await refusedWithoutWrites(() =>
          stack.http
            .post(policiesPath())
            .set(stack.auth)
            .send({ name: 'Bad CEL', ...body }),
        );
        expectFieldError(res, path, message);
        expect(res.body.errors.find((e: { path: string }) => e.path === path).message).toContain(
          'line 1, column',
        );
      },
    );

    it('answers 409 for a duplicate name via POST and via PUT, and writes nothing', async () => {
      for (const send of [
        () => stack.http.post(policiesPath()).set(stack.auth).send({ name: 'Production gate' }),
        () => stack.http.put(policyPath(randomUUID())).set(stack.auth).send({ name: 'Production gate' }),
        () => stack.http.put(policyPath(windowId)).set(stack.auth).send({ name: 'Production gate' }),
      ]) {
        const res = await refusedWithoutWrites(send);
        expect(res.status).toBe(409);
        expect(res.body.code).toBe('duplicate');
      }
    });

    it('answers 401 without a key, and writes nothing', async () => {
      for (const send of [
        () => stack.http.get(policiesPath()),
        () => stack.http.post(policiesPath()).send({ name: 'Anonymous' }),
        () => stack.http.put(policyPath(randomUUID())).send({ name: 'Anonymous' }),
        () => stack.http.delete(policyPath(gate.id)),
      ]) {
        expect((await refusedWithoutWrites(send)).status).toBe(401);
      }
    });

    it("answers 404 for another workspace's policy, and writes nothing", async () => {
      const theirs = await stack.http
        .post(`${otherWs()}/policies`)
        .set(other.auth)
        .send({ name: 'Their gate' })
        .expect(202);
      for (const send of [
        () => stack.http.get(policyPath(theirs.body.id)).set(stack.auth),
        () => stack.http.get(policyPath(theirs.body.id, otherWs())).set(stack.auth),
        () => stack.http.put(policyPath(theirs.body.id)).set(stack.auth).send({ name: 'Taken over' }),
        () => stack.http.delete(policyPath(theirs.body.id)).set(stack.auth),
        () => stack.http.post(`${otherWs()}/policies`).set(stack.auth).send({ name: 'Planted' }),
      ]) {
        const res = await refusedWithoutWrites(send);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
    });

    it('deletes a policy with 202, answering the policy as it was', async () => {
      const res = await stack.http.delete(policyPath(gate.id)).set(stack.auth).expect(202);
      expect(res.body).toEqual(gate);
      await stack.http.get(policyPath(gate.id)).set(stack.auth).expect(404);
      const list = await stack.http.get(policiesPath()).set(stack.auth).expect(200);
      expect(list.body).toEqual({ items: [window], total: 1, limit: 50, offset: 0 });
      expect(
        (await refusedWithoutWrites(() => stack.http.delete(policyPath(gate.id)).set(stack.auth))).status,
      ).toBe(404);
    });
  });
});
