import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  createOtherWorkspace,
  expectFieldError,
  expectNothingWritten as expectNothingWrittenIn,
  expectProblem,
  withoutMessage,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const TIMESTAMP = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
const REDACTED = { sensitive: true };

/** Every table a request to these endpoints may write. */
const WRITTEN_TABLES = [
  'system',
  'system_deployment',
  'system_environment',
  'environment',
  'deployment',
  'deployment_version',
  'release_target',
  'outbox',
] as const;

type Headers = Record<string, string>;

/** A described request, for tables of requests that must all answer the same. */
type Attempt = [what: string, request: () => PromiseLike<Response>];

interface Workspace {
  id: string;
  auth: Headers;
}

describe('systems, environments, deployments and versions over HTTP', () => {
  let stack: TestStack;
  let mine: Workspace;
  let other: Workspace;
  let sequence = 0;

  const unique = (prefix: string) => `${prefix}-${++sequence}`;
  const base = (workspace: Workspace = mine) => `/v1/workspaces/${workspace.id}`;

  async function createSystem(body: Record<string, unknown> = {}, workspace: Workspace = mine) {
    const res = await stack.http
      .post(`${base(workspace)}/systems`)
      .set(workspace.auth)
      .send({ name: unique('System'), ...body })
      .expect(202);
    expect(res.body.message).toBe('System created');
    return withoutMessage(res.body) as { id: string; slug: string; name: string };
  }

  async function createEnvironment(body: Record<string, unknown> = {}, workspace: Workspace = mine) {
    const res = await stack.http
      .post(`${base(workspace)}/environments`)
      .set(workspace.auth)
      .send({ name: unique('env'), ...body })
      .expect(202);
    expect(res.body.message).toBe('Environment created');
    return withoutMessage(res.body) as { id: string; name: string };
  }

  async function createDeployment(body: Record<string, unknown> = {}, workspace: Workspace = mine) {
    const name = unique('deployment');
    const res = await stack.http
      .post(`${base(workspace)}/deployments`)
      .set(workspace.auth)
      .send({ name, slug: name, ...body })
      .expect(202);
    expect(res.body.message).toBe('Deployment created');
    return withoutMessage(res.body) as { id: string; name: string; slug: string; jobAgents: unknown[] };
  }

  async function createVersion(deploymentId: string, body: Record<string, unknown>, workspace = mine) {
    const res = await stack.http
      .post(`${base(workspace)}/deployments/${deploymentId}/versions`)
      .set(workspace.auth)
      .send(body)
      .expect(200);
    return res.body as { id: string; tag: string; status: string };
  }

  /** A deployment read by id without Ctrlplane's `deployment`, `systems` and `variables` beside its fields. */
  function fieldsOf(body: Record<string, unknown>) {
    const { deployment: _deployment, systems: _systems, variables: _variables, ...fields } = body;
    return fields;
  }

  function sql<T extends object[]>(query: string, params: unknown[] = []): Promise<T> {
    return stack.orm.em.fork().getConnection().execute<T>(query, params);
  }

  const expectNothingWritten = (request: () => PromiseLike<Response>) =>
    expectNothingWrittenIn(stack, WRITTEN_TABLES, request);

  async function expectNothingWrittenTo(
    table: (typeof WRITTEN_TABLES)[number],
    request: () => PromiseLike<Response>,
  ): Promise<Response> {
    return expectNothingWrittenIn(stack, [table], request);
  }

  /** Each request answers 404 not_found and leaves every table as it was. */
  async function expectEachNotFound(attempts: Attempt[]): Promise<void> {
    for (const [what, attempt] of attempts) {
      const res = await expectNothingWritten(attempt);
      expect({ what, status: res.status, code: res.body.code }).toEqual({
        what,
        status: 404,
        code: 'not_found',
      });
    }
  }

  async function storedJobAgents(deploymentId: string) {
    const rows = await sql<{ job_agents: { ref: string; config: Record<string, unknown> }[] }[]>(
      'SELECT job_agents FROM deployment WHERE id = ?',
      [deploymentId],
    );
    return rows[0]!.job_agents;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    mine = { id: stack.workspaceId, auth: stack.auth };
    other = await createOtherWorkspace(stack);
  });
  afterAll(() => stack.close());

  describe('systems', () => {
    it('creates a system with POST (202), deriving the slug from the name, and gets it with no links', async () => {
      const created = await stack.http
        .post(`${base()}/systems`)
        .set(stack.auth)
        .send({ name: 'Payments Platform', description: 'Money moves here', metadata: { team: 'payments' } })
        .expect(202);
      expect(created.body).toEqual({
        id: UUID,
        workspaceId: stack.workspaceId,
        name: 'Payments Platform',
        slug: 'payments-platform',
        description: 'Money moves here',
        metadata: { team: 'payments' },
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        message: 'System created',
      });

      const fetched = await stack.http
        .get(`${base()}/systems/${created.body.id}`)
        .set(stack.auth)
        .expect(200);
      expect(fetched.body).toEqual({ ...withoutMessage(created.body), deployments: [], environments: [] });
    });

    it('lists systems oldest first with {items, total, limit, offset}', async () => {
      const before = await stack.http.get(`${base()}/systems`).set(stack.auth).expect(200);
      const first = await createSystem();
      const second = await createSystem();

      const page = await stack.http
        .get(`${base()}/systems?limit=2&offset=${before.body.total}`)
        .set(stack.auth)
        .expect(200);
      expect(page.body).toEqual({
        items: [first, second],
        total: before.body.total + 2,
        limit: 2,
        offset: before.body.total,
      });

      const defaults = await stack.http.get(`${base()}/systems`).set(stack.auth).expect(200);
      expect(defaults.body).toMatchObject({ total: before.body.total + 2, limit: 50, offset: 0 });
      const ownRows = await sql('SELECT count(*)::int AS count FROM system WHERE workspace_id = ?', [
        stack.workspaceId,
      ]);
      expect(ownRows).toEqual([{ count: defaults.body.total }]);
    });

    it.each([
      ['limit=0', 'query.limit'],
      ['limit=1001', 'query.limit'],
      ['offset=-1', 'query.offset'],
    ])('refuses a list page with %s with 400 naming the parameter', async (query, path) => {
      const res = await stack.http.get(`${base()}/systems?${query}`).set(stack.auth);
      expectFieldError(res, path);
    });

    it('creates a system with a client-chosen id by PUT, then replaces it (202 both)', async () => {
      const id = randomUUID();
      const created = await stack.http
        .put(`${base()}/systems/${id}`)
        .set(stack.auth)
        .send({ name: 'Checkout', slug: 'checkout-system', metadata: { tier: '1' } })
        .expect(202);
      expect(created.body).toEqual({
        id,
        workspaceId: stack.workspaceId,
        name: 'Checkout',
        slug: 'checkout-system',
        metadata: { tier: '1' },
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        message: 'System created',
      });

      const replaced = await stack.http
        .put(`${base()}/systems/${id}`)
        .set(stack.auth)
        .send({ name: 'Checkout v2', slug: 'checkout-system', description: 'Replaced' })
        .expect(202);
      expect(replaced.body).toEqual({
        ...created.body,
        name: 'Checkout v2',
        description: 'Replaced',
        metadata: {},
        updatedAt: TIMESTAMP,
        message: 'System updated',
      });
      expect(Date.parse(replaced.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));

      const fetched = await stack.http.get(`${base()}/systems/${id}`).set(stack.auth).expect(200);
      expect(fetched.body).toEqual({ ...withoutMessage(replaced.body), deployments: [], environments: [] });
    });

    it('links a deployment and an environment (202, also when linked already), shows them on the system, and unlinks them', async () => {
      const system = await createSystem();
      const deployment = await createDeployment();
      const environment = await createEnvironment();
      const deploymentLink = `${base()}/systems/${system.id}/deployments/${deployment.id}`;
      const environmentLink = `${base()}/systems/${system.id}/environments/${environment.id}`;

      await stack.http.get(deploymentLink).set(stack.auth).expect(404);
      await stack.http.get(environmentLink).set(stack.auth).expect(404);

      const linkedDeployment = await stack.http.put(deploymentLink).set(stack.auth).expect(202);
      expect(linkedDeployment.body).toEqual({
        id: system.id,
        systemId: system.id,
        deploymentId: deployment.id,
        message: 'The deployment is linked to the system',
      });
      const relinkedDeployment = await stack.http.put(deploymentLink).set(stack.auth).expect(202);
      expect(relinkedDeployment.body).toEqual(linkedDeployment.body);
      const linkedEnvironment = await stack.http.put(environmentLink).set(stack.auth).expect(202);
      expect(linkedEnvironment.body).toEqual({
        id: system.id,
        systemId: system.id,
        environmentId: environment.id,
        message: 'The environment is linked to the system',
      });
      await stack.http.put(environmentLink).set(stack.auth).expect(202);

      const deploymentLinkRead = await stack.http.get(deploymentLink).set(stack.auth).expect(200);
      expect(deploymentLinkRead.body).toEqual({ systemId: system.id, deploymentId: deployment.id });
      const environmentLinkRead = await stack.http.get(environmentLink).set(stack.auth).expect(200);
      expect(environmentLinkRead.body).toEqual({ systemId: system.id, environmentId: environment.id });

      const deploymentNow = await stack.http
        .get(`${base()}/deployments/${deployment.id}`)
        .set(stack.auth)
        .expect(200);
      const environmentNow = await stack.http
        .get(`${base()}/environments/${environment.id}`)
        .set(stack.auth)
        .expect(200);
      expect(deploymentNow.body.systemIds).toEqual([system.id]);
      expect(environmentNow.body.systemIds).toEqual([system.id]);
      const withLinks = await stack.http.get(`${base()}/systems/${system.id}`).set(stack.auth).expect(200);
      expect(withLinks.body.deployments).toEqual([fieldsOf(deploymentNow.body)]);
      expect(environmentNow.body.systems).toEqual([
        expect.objectContaining({ id: system.id, slug: system.slug }),
      ]);
      const { systems: _systems, ...environmentFields } = environmentNow.body;
      expect(withLinks.body.environments).toEqual([environmentFields]);

      const unlinked = await stack.http.delete(deploymentLink).set(stack.auth).expect(202);
      expect(unlinked.body).toEqual({
        id: system.id,
        message: 'The deployment is no longer linked to the system',
      });
      const unlinkedEnvironment = await stack.http.delete(environmentLink).set(stack.auth).expect(202);
      expect(unlinkedEnvironment.body).toEqual({
        id: system.id,
        message: 'The environment is no longer linked to the system',
      });

      const secondUnlink = await expectNothingWritten(() =>
        stack.http.delete(deploymentLink).set(stack.auth),
      );
      expectProblem(secondUnlink, 404, 'not_found');
      const secondEnvironmentUnlink = await expectNothingWritten(() =>
        stack.http.delete(environmentLink).set(stack.auth),
      );
      expectProblem(secondEnvironmentUnlink, 404, 'not_found');
      await stack.http.get(deploymentLink).set(stack.auth).expect(404);
      await stack.http.get(environmentLink).set(stack.auth).expect(404);
      const withoutLinks = await stack.http.get(`${base()}/systems/${system.id}`).set(stack.auth).expect(200);
      expect(withoutLinks.body).toMatchObject({ deployments: [], environments: [] });
    });

    it('deletes a system (202) with its links but keeps the linked deployment', async () => {
      const system = await createSystem();
      const deployment = await createDeployment();
      await stack.http
        .put(`${base()}/systems/${system.id}/deployments/${deployment.id}`)
        .set(stack.auth)
        .expect(202);

      const deleted = await stack.http.delete(`${base()}/systems/${system.id}`).set(stack.auth).expect(202);
      expect(deleted.body).toEqual({ id: system.id, message: 'System deleted' });

      expectProblem(await stack.http.get(`${base()}/systems/${system.id}`).set(stack.auth), 404, 'not_found');
      const deploymentNow = await stack.http
        .get(`${base()}/deployments/${deployment.id}`)
        .set(stack.auth)
        .expect(200);
      expect(deploymentNow.body.systemIds).toEqual([]);
      const again = await expectNothingWritten(() =>
        stack.http.delete(`${base()}/systems/${system.id}`).set(stack.auth),
      );
      expectProblem(again, 404, 'not_found');
    });

    it.each([
      ['a slug with spaces', { name: 'Bad', slug: 'not a slug' }, 'body.slug'],
      ['an empty name', { name: '   ' }, 'body.name'],
      ['metadata that is not a string map', { name: 'Bad', metadata: { tier: 1 } }, 'body.metadata.tier'],
    ])('refuses %s with 400 naming the field, and writes nothing', async (_, body, path) => {
      const res = await expectNothingWritten(() =>
        stack.http.post(`${base()}/systems`).set(stack.auth).send(body),
      );
      expectFieldError(res, path);
      const put = await expectNothingWritten(() =>
        stack.http.put(`${base()}/systems/${randomUUID()}`).set(stack.auth).send(body),
      );
      expectFieldError(put, path);
    });

    it('answers 401 without a key and writes nothing', async () => {
      const res = await expectNothingWritten(() =>
        stack.http.post(`${base()}/systems`).send({ name: 'No key system' }),
      );
      expectProblem(res, 401, 'unauthenticated');
      expectProblem(await stack.http.get(`${base()}/systems`), 401, 'unauthenticated');
    });

    it('answers 409 for a duplicate slug, by POST and by PUT, and writes nothing', async () => {
      const existing = await createSystem();
      const posted = await expectNothingWritten(() =>
        stack.http.post(`${base()}/systems`).set(stack.auth).send({ name: 'Copy', slug: existing.slug }),
      );
      expectProblem(posted, 409, 'duplicate');
      expect(posted.body.detail).toContain(existing.slug);

      const put = await expectNothingWritten(() =>
        stack.http.put(`${base()}/systems/${randomUUID()}`).set(stack.auth).send({ name: existing.name }),
      );
      expectProblem(put, 409, 'duplicate');
    });

    it("answers 404 for another workspace's system, deployment and environment, and writes nothing", async () => {
      const theirSystem = await createSystem({ name: 'Their system' }, other);
      const theirDeployment = await createDeployment({}, other);
      const theirEnvironment = await createEnvironment({}, other);
      const mySystem = await createSystem();
      const myDeployment = await createDeployment();

      const attempts: Attempt[] = [
        ['GET their system', () => stack.http.get(`${base()}/systems/${theirSystem.id}`).set(stack.auth)],
        [
          'PUT over their system',
          () =>
            stack.http
              .put(`${base()}/systems/${theirSystem.id}`)
              .set(stack.auth)
              .send({ name: 'Hijacked', slug: unique('hijacked') }),
        ],
        [
          'DELETE their system',
          () => stack.http.delete(`${base()}/systems/${theirSystem.id}`).set(stack.auth),
        ],
        [
          'link my deployment to their system',
          () =>
            stack.http
              .put(`${base()}/systems/${theirSystem.id}/deployments/${myDeployment.id}`)
              .set(stack.auth),
        ],
        [
          'link their deployment to my system',
          () =>
            stack.http
              .put(`${base()}/systems/${mySystem.id}/deployments/${theirDeployment.id}`)
              .set(stack.auth),
        ],
        [
          'link their environment to my system',
          () =>
            stack.http
              .put(`${base()}/systems/${mySystem.id}/environments/${theirEnvironment.id}`)
              .set(stack.auth),
        ],
        [
          'GET the link of their deployment',
          () =>
            stack.http
              .get(`${base()}/systems/${mySystem.id}/deployments/${theirDeployment.id}`)
              .set(stack.auth),
        ],
        ['list in their workspace', () => stack.http.get(`${base(other)}/systems`).set(stack.auth)],
        [
          'GET in their workspace',
          () => stack.http.get(`${base(other)}/systems/${theirSystem.id}`).set(stack.auth),
        ],
        [
          'POST in their workspace',
          () =>
            stack.http
              .post(`${base(other)}/systems`)
              .set(stack.auth)
              .send({ name: unique('Intruder') }),
        ],
        [
          'link in their workspace',
          () =>
            stack.http
              .put(`${base(other)}/systems/${theirSystem.id}/deployments/${theirDeployment.id}`)
              .set(stack.auth),
        ],
      ];
      await expectEachNotFound(attempts);

      const theirs = await stack.http
        .get(`${base(other)}/systems/${theirSystem.id}`)
        .set(other.auth)
        .expect(200);
      expect(theirs.body).toMatchObject({ name: 'Their system', deployments: [], environments: [] });
    });
  });

  describe('environments', () => {
    it('creates an environment with POST (202) and reads it by id and by name', async () => {
      const created = await stack.http
        .post(`${base()}/environments`)
        .set(stack.auth)
        .send({
          name: 'Production EU',
          description: 'Frankfurt',
          resourceSelector: 'resource.metadata["region"] == "eu"',
          metadata: { tier: 'prod' },
        })
        .expect(202);
      expect(created.body).toEqual({
        id: UUID,
        workspaceId: stack.workspaceId,
        name: 'Production EU',
        description: 'Frankfurt',
        resourceSelector: 'resource.metadata["region"] == "eu"',
        metadata: { tier: 'prod' },
        systemIds: [],
        systems: [],
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        message: 'Environment created',
      });

      const byId = await stack.http
        .get(`${base()}/environments/${created.body.id}`)
        .set(stack.auth)
        .expect(200);
      expect(byId.body).toEqual(withoutMessage(created.body));
      const byName = await stack.http
        .get(`${base()}/environments/name/${encodeURIComponent('Production EU')}`)
        .set(stack.auth)
        .expect(200);
      expect(byName.body).toEqual(withoutMessage(created.body));
      expectProblem(
        await stack.http.get(`${base()}/environments/name/no-such-environment`).set(stack.auth),
        404,
        'not_found',
      );
    });

    it('creates an environment with a client-chosen id by PUT, then replaces it (202 both)', async () => {
      const id = randomUUID();
      const created = await stack.http
        .put(`${base()}/environments/${id}`)
        .set(stack.auth)
        .send({ name: 'staging-put', metadata: { tier: 'staging' } })
        .expect(202);
      expect(created.body).toEqual({
        id,
        workspaceId: stack.workspaceId,
        name: 'staging-put',
        metadata: { tier: 'staging' },
        systemIds: [],
        systems: [],
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        message: 'Environment created',
      });

      const replaced = await stack.http
        .put(`${base()}/environments/${id}`)
        .set(stack.auth)
        .send({ name: 'staging-renamed', resourceSelector: 'resource.kind == "cluster"' })
        .expect(202);
      expect(replaced.body).toEqual({
        ...created.body,
        name: 'staging-renamed',
        resourceSelector: 'resource.kind == "cluster"',
        metadata: {},
        updatedAt: TIMESTAMP,
        message: 'Environment updated',
      });
      const fetched = await stack.http.get(`${base()}/environments/${id}`).set(stack.auth).expect(200);
      expect(fetched.body).toEqual(withoutMessage(replaced.body));
    });

    it('lists environments oldest first, filtered by a CEL expression over `environment`', async () => {
      const marker = unique('cel-env');
      const first = await createEnvironment({ metadata: { group: marker, tier: 'prod' } });
      await createEnvironment({ metadata: { group: marker, tier: 'dev' } });
      const third = await createEnvironment({ metadata: { group: marker, tier: 'prod' } });
      const expression = `environment.metadata["group"] == "${marker}" && environment.metadata["tier"] == "prod"`;

      const filtered = await stack.http
        .get(`${base()}/environments`)
        .query({ cel: expression })
        .set(stack.auth)
        .expect(200);
      expect(filtered.body).toMatchObject({ items: [first, third], total: 2, limit: 50, offset: 0 });

      const secondPage = await stack.http
        .get(`${base()}/environments`)
        .query({ cel: expression, limit: 1, offset: 1 })
        .set(stack.auth)
        .expect(200);
      expect(secondPage.body).toMatchObject({ items: [third], total: 2, limit: 1, offset: 1 });

      const byName = await stack.http
        .get(`${base()}/environments`)
        .query({ cel: `environment.name == "${first.name}"` })
        .set(stack.auth)
        .expect(200);
      expect(byName.body.items).toEqual([first]);
    });

    it('deletes an environment (202), after which it is gone', async () => {
      const environment = await createEnvironment();
      const deleted = await stack.http
        .delete(`${base()}/environments/${environment.id}`)
        .set(stack.auth)
        .expect(202);
      expect(deleted.body).toEqual({ id: environment.id, message: 'Environment deleted' });
      expectProblem(
        await stack.http.get(`${base()}/environments/${environment.id}`).set(stack.auth),
        404,
        'not_found',
      );
      expectProblem(
        await stack.http.get(`${base()}/environments/name/${environment.name}`).set(stack.auth),
        404,
        'not_found',
      );
    });

    it.each([
      ['an empty name', { name: '' }, 'body.name'],
      [
        'a description that is not a string',
        { name: 'bad-description', description: 42 },
        'body.description',
      ],
    ])('refuses %s with 400 naming the field, and writes nothing', async (_, body, path) => {
      const res = await expectNothingWritten(() =>
        stack.http.post(`${base()}/environments`).set(stack.auth).send(body),
      );
      expectFieldError(res, path);
    });

    it('refuses a resourceSelector that is not valid CEL with 400 giving its position, and writes nothing', async () => {
      const posted = await expectNothingWritten(() =>
        stack.http
          .post(`${base()}/environments`)
          .set(stack.auth)
          .send({ name: 'bad-selector', resourceSelector: 'resource.kind ==' }),
      );
      expectFieldError(posted, 'body.resourceSelector', 'line 1, column');

      const put = await expectNothingWritten(() =>
        stack.http
          .put(`${base()}/environments/${randomUUID()}`)
          .set(stack.auth)
          .send({ name: 'bad-selector', resourceSelector: 'resource.kind ==' }),
      );
      expectFieldError(put, 'body.resourceSelector', 'line 1, column');
    });

    it('refuses a list filter that is not valid CEL with 400 giving its position', async () => {
      const res = await expectNothingWritten(() =>
        stack.http.get(`${base()}/environments`).query({ cel: 'environment.name ==' }).set(stack.auth),
      );
      expectFieldError(res, 'query.cel', 'line 1, column');
    });

    it('answers 401 without a key and writes nothing', async () => {
      const res = await expectNothingWritten(() =>
        stack.http.post(`${base()}/environments`).send({ name: 'no-key-environment' }),
      );
      expectProblem(res, 401, 'unauthenticated');
    });

    it('answers 409 for a duplicate name, by POST and by PUT, and writes nothing', async () => {
      const existing = await createEnvironment();
      const posted = await expectNothingWritten(() =>
        stack.http.post(`${base()}/environments`).set(stack.auth).send({ name: existing.name }),
      );
      expectProblem(posted, 409, 'duplicate');
      expect(posted.body.detail).toContain(existing.name);

      const put = await expectNothingWritten(() =>
        stack.http
          .put(`${base()}/environments/${randomUUID()}`)
          .set(stack.auth)
          .send({ name: existing.name }),
      );
      expectProblem(put, 409, 'duplicate');

      const renamed = await createEnvironment();
      const renameOnto = await expectNothingWritten(() =>
        stack.http.put(`${base()}/environments/${renamed.id}`).set(stack.auth).send({ name: existing.name }),
      );
      expectProblem(renameOnto, 409, 'duplicate');
    });

    it("answers 404 for another workspace's environment and writes nothing", async () => {
      const theirs = await createEnvironment({ name: unique('their-env') }, other);
      const attempts: Attempt[] = [
        ['GET', () => stack.http.get(`${base()}/environments/${theirs.id}`).set(stack.auth)],
        ['GET by name', () => stack.http.get(`${base()}/environments/name/${theirs.name}`).set(stack.auth)],
        [
          'PUT over',
          () =>
            stack.http.put(`${base()}/environments/${theirs.id}`).set(stack.auth).send({ name: 'hijacked' }),
        ],
        ['DELETE', () => stack.http.delete(`${base()}/environments/${theirs.id}`).set(stack.auth)],
        ['list in their workspace', () => stack.http.get(`${base(other)}/environments`).set(stack.auth)],
        [
          'GET in their workspace',
          () => stack.http.get(`${base(other)}/environments/${theirs.id}`).set(stack.auth),
        ],
        [
          'POST in their workspace',
          () =>
            stack.http
              .post(`${base(other)}/environments`)
              .set(stack.auth)
              .send({ name: unique('intruder') }),
        ],
      ];
      await expectEachNotFound(attempts);
      const unchanged = await stack.http
        .get(`${base(other)}/environments/${theirs.id}`)
        .set(other.auth)
        .expect(200);
      expect(unchanged.body).toEqual(theirs);
    });
  });

  describe('deployments', () => {
    it('creates a deployment with POST (202), hiding sensitive agent configuration, and stores it sealed', async () => {
      const created = await stack.http
        .post(`${base()}/deployments`)
        .set(stack.auth)
        .send({
          name: 'Web',
          slug: 'web-frontend',
          description: 'The storefront',
          resourceSelector: 'resource.kind == "service"',
          jobAgents: [
            {
              ref: 'github-runner',
              config: { repo: 'acme/web', token: 'ghp_plaintext_token' },
              selector: 'resource.metadata["region"] == "eu"',
            },
            { ref: 'argo' },
          ],
          metadata: { team: 'storefront' },
        })
        .expect(202);
      expect(created.body).toEqual({
        id: UUID,
        workspaceId: stack.workspaceId,
        name: 'Web',
        slug: 'web-frontend',
        description: 'The storefront',
        resourceSelector: 'resource.kind == "service"',
        jobAgents: [
          {
            ref: 'github-runner',
            config: { repo: 'acme/web', token: REDACTED },
            selector: 'resource.metadata["region"] == "eu"',
          },
          { ref: 'argo', config: {} },
        ],
        metadata: { team: 'storefront' },
        systemIds: [],
        jobAgentSelector: '',
        jobAgentConfig: {},
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        message: 'Deployment created',
      });
      expect(JSON.stringify(created.body)).not.toContain('ghp_plaintext_token');

      const fetched = await stack.http
        .get(`${base()}/deployments/${created.body.id}`)
        .set(stack.auth)
        .expect(200);
      const record = withoutMessage(created.body);
      expect(fetched.body).toEqual({ ...record, deployment: record, systems: [], variables: [] });

      const [stored] = await storedJobAgents(created.body.id);
      const sealedToken = stored!.config.token;
      expect(typeof sealedToken).toBe('string');
      expect(sealedToken as string).toMatch(/^fd2:/);
      expect(sealedToken).not.toContain('ghp_plaintext_token');
      expect(
        stack.secrets.forRecord(stack.workspaceId, 'deployment', created.body.id).open(sealedToken as string),
      ).toBe('ghp_plaintext_token');
      expect(stored!.config.repo).toBe('acme/web');
    });

    it('turns the applier spelling jobAgent {ref} with jobAgentConfig into one jobAgents entry', async () => {
      const created = await stack.http
        .post(`${base()}/deployments`)
        .set(stack.auth)
        .send({
          name: 'Applier',
          slug: unique('applier'),
          jobAgent: { ref: 'terraform-cloud' },
          jobAgentConfig: { workspace: 'infra', token: 'tfc-secret' },
        })
        .expect(202);
      expect(created.body.jobAgents).toEqual([
        { ref: 'terraform-cloud', config: { workspace: 'infra', token: REDACTED } },
      ]);
      const stored = await storedJobAgents(created.body.id);
      expect(stored).toEqual([
        { ref: 'terraform-cloud', config: { workspace: 'infra', token: expect.stringMatching(/^fd2:/) } },
      ]);

      const withoutConfig = await createDeployment({ jobAgent: { ref: 'argo' } });
      expect(withoutConfig.jobAgents).toEqual([{ ref: 'argo', config: {} }]);
    });

    it('creates by PUT, replaces (202 both), and keeps a sensitive value written back as {"sensitive": true}', async () => {
      const id = randomUUID();
      const slug = unique('put-deployment');
      const created = await stack.http
        .put(`${base()}/deployments/${id}`)
        .set(stack.auth)
        .send({
          name: 'Put deployment',
          slug,
          jobAgents: [{ ref: 'github', config: { token: 'first-secret' } }],
        })
        .expect(202);
      expect(created.body).toEqual({
        id,
        workspaceId: stack.workspaceId,
        name: 'Put deployment',
        slug,
        jobAgents: [{ ref: 'github', config: { token: REDACTED } }],
        metadata: {},
        systemIds: [],
        jobAgentSelector: '',
        jobAgentConfig: {},
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        message: 'Deployment created',
      });
      const [sealedAtCreate] = await storedJobAgents(id);

      // Sent back as read: "" (no selector) and {} (no selector configuration) beside the jobAgents.
      const { name, description, resourceSelector, jobAgents, jobAgentSelector, jobAgentConfig, metadata } =
        created.body;
      const writtenBack = await stack.http
        .put(`${base()}/deployments/${id}`)
        .set(stack.auth)
        .send({
          name,
          slug,
          description,
          resourceSelector,
          jobAgents,
          jobAgentSelector,
          jobAgentConfig,
          metadata: { ...metadata, edited: 'yes' },
        })
        .expect(202);
      expect(writtenBack.body).toEqual({
        ...created.body,
        metadata: { edited: 'yes' },
        updatedAt: TIMESTAMP,
        message: 'Deployment updated',
      });
      const [kept] = await storedJobAgents(id);
      expect(kept!.config.token).toBe(sealedAtCreate!.config.token);
      const secrets = stack.secrets.forRecord(stack.workspaceId, 'deployment', id);
      expect(secrets.open(kept!.config.token as string)).toBe('first-secret');

      await stack.http
        .put(`${base()}/deployments/${id}`)
        .set(stack.auth)
        .send({ name, slug, jobAgents: [{ ref: 'github', config: { token: 'second-secret' } }] })
        .expect(202);
      const [rotated] = await storedJobAgents(id);
      expect(rotated!.config.token).toMatch(/^fd2:/);
      expect(secrets.open(rotated!.config.token as string)).toBe('second-secret');
    });

    it('finds a deployment by name, refuses a second one of that name (409), and answers 409 when older data shares it', async () => {
      const sharedName = unique('Shared name');
      const first = await createDeployment({ name: sharedName });
      const found = await stack.http
        .get(`${base()}/deployments/name/${encodeURIComponent(sharedName)}`)
        .set(stack.auth)
        .expect(200);
      const byId = await stack.http.get(`${base()}/deployments/${first.id}`).set(stack.auth).expect(200);
      expect(found.body).toEqual(byId.body);
      expect(found.body).toEqual({ ...first, deployment: first, systems: [], variables: [] });

      const duplicate = await expectNothingWritten(() =>
        stack.http
          .post(`${base()}/deployments`)
          .set(stack.auth)
          .send({ name: sharedName, slug: unique('other-slug') }),
      );
      expectProblem(duplicate, 409, 'duplicate_name');
      // Two deployments of one name, as stored before names were unique.
      const other = await createDeployment();
      await sql('UPDATE deployment SET name = ? WHERE id = ?', [sharedName, other.id]);
      const ambiguous = await expectNothingWritten(() =>
        stack.http.get(`${base()}/deployments/name/${encodeURIComponent(sharedName)}`).set(stack.auth),
      );
      expectProblem(ambiguous, 409, 'ambiguous');
      expectProblem(
        await stack.http.get(`${base()}/deployments/name/no-such-deployment`).set(stack.auth),
        404,
        'not_found',
      );
    });

    it('lists deployments oldest first, filtered by a CEL expression over `deployment`', async () => {
      const team = unique('team');
      const api = await createDeployment({ slug: `${team}-api`, metadata: { team } });
      await createDeployment({ slug: `${team}-worker`, metadata: { team: 'someone-else' } });
      const web = await createDeployment({ slug: `${team}-web`, metadata: { team } });
      const expression = `deployment.metadata["team"] == "${team}"`;

      const filtered = await stack.http
        .get(`${base()}/deployments`)
        .query({ cel: expression })
        .set(stack.auth)
        .expect(200);
      expect(filtered.body).toMatchObject({ items: [api, web], total: 2, limit: 50, offset: 0 });

      const bySlug = await stack.http
        .get(`${base()}/deployments`)
        .query({ cel: `deployment.slug.startsWith("${team}-w")`, limit: 1 })
        .set(stack.auth)
        .expect(200);
      expect(bySlug.body).toMatchObject({ total: 2, limit: 1, offset: 0 });
      expect(bySlug.body.items).toHaveLength(1);
      expect(bySlug.body.items[0].slug).toBe(`${team}-worker`);
    });

    it('shows the systems a deployment is linked to in systemIds, in link order', async () => {
      const deployment = await createDeployment();
      const firstSystem = await createSystem();
      const secondSystem = await createSystem();
      for (const system of [firstSystem, secondSystem]) {
        await stack.http
          .put(`${base()}/systems/${system.id}/deployments/${deployment.id}`)
          .set(stack.auth)
          .expect(202);
      }
      const fetched = await stack.http
        .get(`${base()}/deployments/${deployment.id}`)
        .set(stack.auth)
        .expect(200);
      expect(fetched.body.systemIds).toEqual([firstSystem.id, secondSystem.id]);
      expect(fetched.body.systems.map((system: { id: string }) => system.id)).toEqual([
        firstSystem.id,
        secondSystem.id,
      ]);
      const listed = await stack.http
        .get(`${base()}/deployments`)
        .query({ cel: `deployment.id == "${deployment.id}"` })
        .set(stack.auth)
        .expect(200);
      // Each list item is Ctrlplane's DeploymentAndSystems too: the record as `deployment`, and its `systems`.
      const { variables: _variables, ...withSystems } = fetched.body;
      expect(listed.body.items).toEqual([withSystems]);
      expect(listed.body.items[0].deployment).toEqual(fieldsOf(fetched.body));
    });

    it('deletes a deployment (202) with its versions', async () => {
      const deployment = await createDeployment();
      await createVersion(deployment.id, { tag: '1.0.0', status: 'building' });
      const deleted = await stack.http
        .delete(`${base()}/deployments/${deployment.id}`)
        .set(stack.auth)
        .expect(202);
      expect(deleted.body).toEqual({ id: deployment.id, message: 'Deployment deleted' });
      expectProblem(
        await stack.http.get(`${base()}/deployments/${deployment.id}`).set(stack.auth),
        404,
        'not_found',
      );
      const versions = await sql(
        'SELECT count(*)::int AS count FROM deployment_version WHERE deployment_id = ?',
        [deployment.id],
      );
      expect(versions).toEqual([{ count: 0 }]);
    });

    it.each([
      ['a slug with spaces', { name: 'Bad', slug: 'bad slug' }, 'body.slug'],
      ['a missing slug', { name: 'Bad' }, 'body.slug'],
      [
        'a job agent without ref',
        { name: 'Bad', slug: 'bad-agent', jobAgents: [{ config: {} }] },
        'body.jobAgents[0].ref',
      ],
      [
        'jobAgents together with jobAgent',
        { name: 'Bad', slug: 'bad-both', jobAgents: [], jobAgent: { ref: 'argo' } },
        'body.jobAgent',
      ],
      [
        'jobAgentConfig without jobAgent (an empty one says nothing, and is taken)',
        { name: 'Bad', slug: 'bad-config', jobAgentConfig: { image: 'web' } },
        'body.jobAgentConfig',
      ],
      [
        'a sensitive marker with no stored value to keep',
        { name: 'Bad', slug: 'bad-marker', jobAgents: [{ ref: 'github', config: { token: REDACTED } }] },
        'body.jobAgents[0].config.token',
      ],
    ])('refuses %s with 400 naming the field, and writes nothing', async (_, body, path) => {
      const res = await expectNothingWritten(() =>
        stack.http.post(`${base()}/deployments`).set(stack.auth).send(body),
      );
      expectFieldError(res, path);
    });

    it('refuses selectors that are not valid CEL with 400 giving their position, and writes nothing', async () => {
      const resourceSelector = await expectNothingWritten(() =>
        stack.http
          .post(`${base()}/deployments`)
          .set(stack.auth)
          .send({ name: 'Bad', slug: 'bad-selector', resourceSelector: 'resource.kind ==' }),
      );
      expectFieldError(resourceSelector, 'body.resourceSelector', 'line 1, column');

      const agentSelector = await expectNothingWritten(() =>
        stack.http
          .post(`${base()}/deployments`)
          .set(stack.auth)
          .send({
            name: 'Bad',
            slug: 'bad-agent-selector',
            jobAgents: [{ ref: 'argo', selector: 'resource.kind ==' }],
          }),
      );
      expectFieldError(agentSelector, 'body.jobAgents[0].selector', 'line 1, column');

      const listFilter = await expectNothingWritten(() =>
        stack.http.get(`${base()}/deployments`).query({ cel: 'deployment.slug ==' }).set(stack.auth),
      );
      expectFieldError(listFilter, 'query.cel', 'line 1, column');
    });

    it('answers 401 without a key and writes nothing', async () => {
      const res = await expectNothingWritten(() =>
        stack.http.post(`${base()}/deployments`).send({ name: 'No key', slug: 'no-key' }),
      );
      expectProblem(res, 401, 'unauthenticated');
    });

    it('answers 409 for a duplicate slug, by POST and by PUT, and writes nothing', async () => {
      const existing = await createDeployment();
      const posted = await expectNothingWritten(() =>
        stack.http.post(`${base()}/deployments`).set(stack.auth).send({ name: 'Copy', slug: existing.slug }),
      );
      expectProblem(posted, 409, 'duplicate');
      expect(posted.body.detail).toContain(existing.slug);

      const put = await expectNothingWritten(() =>
        stack.http
          .put(`${base()}/deployments/${randomUUID()}`)
          .set(stack.auth)
          .send({ name: 'Copy', slug: existing.slug }),
      );
      expectProblem(put, 409, 'duplicate');
    });

    it("answers 404 for another workspace's deployment and writes nothing", async () => {
      const theirs = await createDeployment(
        { jobAgents: [{ ref: 'github', config: { token: 'their-secret' } }] },
        other,
      );
      const attempts: Attempt[] = [
        ['GET', () => stack.http.get(`${base()}/deployments/${theirs.id}`).set(stack.auth)],
        ['GET by name', () => stack.http.get(`${base()}/deployments/name/${theirs.name}`).set(stack.auth)],
        [
          'PUT over, keeping their secret',
          () =>
            stack.http
              .put(`${base()}/deployments/${theirs.id}`)
              .set(stack.auth)
              .send({
                name: 'Hijacked',
                slug: unique('hijacked'),
                jobAgents: [{ ref: 'github', config: { token: REDACTED } }],
              }),
        ],
        ['DELETE', () => stack.http.delete(`${base()}/deployments/${theirs.id}`).set(stack.auth)],
        ['list in their workspace', () => stack.http.get(`${base(other)}/deployments`).set(stack.auth)],
        [
          'GET in their workspace',
          () => stack.http.get(`${base(other)}/deployments/${theirs.id}`).set(stack.auth),
        ],
        [
          'POST in their workspace',
          () =>
            stack.http
              .post(`${base(other)}/deployments`)
              .set(stack.auth)
              .send({ name: 'Intruder', slug: unique('intruder') }),
        ],
      ];
      await expectEachNotFound(attempts);
      const unchanged = await stack.http
        .get(`${base(other)}/deployments/${theirs.id}`)
        .set(other.auth)
        .expect(200);
      expect(fieldsOf(unchanged.body)).toEqual(theirs);
    });
  });

  describe('versions', () => {
    let deploymentId: string;
    const versionsOf = (id: string, workspace: Workspace = mine) =>
      `${base(workspace)}/deployments/${id}/versions`;

    beforeAll(async () => {
      deploymentId = (await createDeployment({ name: 'Versioned' })).id;
    });

    it('creates a ready version (200) whose rollout is pending, and a building one named by its tag with no rollout', async () => {
      const ready = await stack.http
        .post(versionsOf(deploymentId))
        .set(stack.auth)
        .send({
          tag: '1.0.0',
          name: 'First',
          config: { image: 'web:1.0.0' },
          metadata: { channel: 'stable' },
        })
        .expect(200);
      expect(ready.body).toEqual({
        id: UUID,
        deploymentId,
        tag: '1.0.0',
        name: 'First',
        status: 'ready',
        config: { image: 'web:1.0.0' },
        jobAgentConfig: {},
        metadata: { channel: 'stable' },
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        rollout: { status: 'pending', releaseCount: 0, completedAt: null },
        dependencies: {},
      });

      const building = await stack.http
        .post(versionsOf(deploymentId))
        .set(stack.auth)
        .send({ tag: '1.1.0-rc1', status: 'building' })
        .expect(200);
      expect(building.body).toEqual({
        id: UUID,
        deploymentId,
        tag: '1.1.0-rc1',
        name: '1.1.0-rc1',
        status: 'building',
        config: {},
        jobAgentConfig: {},
        metadata: {},
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        rollout: null,
        dependencies: {},
      });

      const fetched = await stack.http
        .get(`${base()}/deployment-versions/${ready.body.id}`)
        .set(stack.auth)
        .expect(200);
      expect(fetched.body).toEqual(ready.body);
      const viaAlias = await stack.http
        .get(`${base()}/deploymentversions/${ready.body.id}`)
        .set(stack.auth)
        .expect(200);
      expect(viaAlias.body).toEqual(ready.body);
    });

    it('lists versions newest first, filtered by status and by a CEL expression over `version`', async () => {
      const deployment = await createDeployment();
      const v1 = await createVersion(deployment.id, { tag: 'v1', metadata: { channel: 'stable' } });
      const v2 = await createVersion(deployment.id, { tag: 'v2', status: 'building' });
      const v3 = await createVersion(deployment.id, { tag: 'v3', metadata: { channel: 'beta' } });

      const all = await stack.http.get(versionsOf(deployment.id)).set(stack.auth).expect(200);
      expect(all.body).toEqual({ items: [v3, v2, v1], total: 3, limit: 50, offset: 0 });

      const paged = await stack.http
        .get(versionsOf(deployment.id))
        .query({ limit: 1, offset: 1 })
        .set(stack.auth)
        .expect(200);
      expect(paged.body).toEqual({ items: [v2], total: 3, limit: 1, offset: 1 });

      const ready = await stack.http
        .get(versionsOf(deployment.id))
        .query({ status: 'ready' })
        .set(stack.auth)
        .expect(200);
      expect(ready.body).toEqual({ items: [v3, v1], total: 2, limit: 50, offset: 0 });

      const stable = await stack.http
        .get(versionsOf(deployment.id))
        .query({ cel: 'version.metadata["channel"] == "stable"' })
        .set(stack.auth)
        .expect(200);
      expect(stable.body).toEqual({ items: [v1], total: 1, limit: 50, offset: 0 });

      const readyBeta = await stack.http
        .get(versionsOf(deployment.id))
        .query({ status: 'ready', cel: 'version.tag.startsWith("v") && version.tag != "v1"' })
        .set(stack.auth)
        .expect(200);
      expect(readyBeta.body).toEqual({ items: [v3], total: 1, limit: 50, offset: 0 });
    });

    it('moves a building version to ready by PATCH (202), which makes its rollout pending', async () => {
      const version = await createVersion(deploymentId, { tag: unique('building'), status: 'building' });
      const outboxBefore = await sql<{ count: number }[]>(
        `SELECT count(*)::int AS count FROM outbox WHERE kind = 'version.ready' AND payload->>'versionId' = ?`,
        [version.id],
      );
      expect(outboxBefore).toEqual([{ count: 0 }]);

      const moved = await stack.http
        .patch(`${base()}/deployment-versions/${version.id}`)
        .set(stack.auth)
        .send({ status: 'ready' })
        .expect(202);
      expect(moved.body).toEqual({
        ...version,
        status: 'ready',
        updatedAt: TIMESTAMP,
        rollout: { status: 'pending', releaseCount: 0, completedAt: null },
      });
      const fetched = await stack.http
        .get(`${base()}/deployment-versions/${version.id}`)
        .set(stack.auth)
        .expect(200);
      expect(fetched.body).toEqual(moved.body);

      const outboxAfter = await sql<{ payload: Record<string, string> }[]>(
        `SELECT payload FROM outbox WHERE kind = 'version.ready' AND payload->>'versionId' = ?`,
        [version.id],
      );
      expect(outboxAfter).toEqual([
        {
          payload: {
            kind: 'version.ready',
            workspaceId: stack.workspaceId,
            deploymentId,
            versionId: version.id,
          },
        },
      ]);
    });

    it('accepts a PATCH that keeps a ready version ready (202) without starting a second rollout', async () => {
      const version = await createVersion(deploymentId, { tag: unique('stay-ready') });
      const res = await expectNothingWrittenTo('outbox', () =>
        stack.http
          .patch(`${base()}/deployment-versions/${version.id}`)
          .set(stack.auth)
          .send({ status: 'ready', metadata: { note: 'still ready' } })
          .expect(202),
      );
      expect(res.body).toEqual({ ...version, metadata: { note: 'still ready' }, updatedAt: TIMESTAMP });
    });

    it('hides a sensitive jobAgentConfig key of a version and keeps it when PATCHed back', async () => {
      const created = await stack.http
        .post(versionsOf(deploymentId))
        .set(stack.auth)
        .send({
          tag: unique('secret'),
          status: 'building',
          jobAgentConfig: { ref: 'main', token: 'version-secret' },
        })
        .expect(200);
      expect(created.body.jobAgentConfig).toEqual({ ref: 'main', token: REDACTED });
      const storedToken = async () => {
        const rows = await sql<{ token: string }[]>(
          `SELECT job_agent_config->>'token' AS token FROM deployment_version WHERE id = ?`,
          [created.body.id],
        );
        return rows[0]!.token;
      };
      const sealed = await storedToken();
      expect(sealed).toMatch(/^fd2:/);

      const patched = await stack.http
        .patch(`${base()}/deployment-versions/${created.body.id}`)
        .set(stack.auth)
        .send({ jobAgentConfig: { ref: 'release', token: REDACTED } })
        .expect(202);
      expect(patched.body.jobAgentConfig).toEqual({ ref: 'release', token: REDACTED });
      expect(await storedToken()).toBe(sealed);
      expect(stack.secrets.forRecord(stack.workspaceId, 'version', created.body.id).open(sealed)).toBe(
        'version-secret',
      );
    });

    it('moves building → failed through the /deploymentversions alias, and ready → failed (202)', async () => {
      const building = await createVersion(deploymentId, { tag: unique('to-fail'), status: 'building' });
      const failed = await stack.http
        .patch(`${base()}/deploymentversions/${building.id}`)
        .set(stack.auth)
        .send({ status: 'failed' })
        .expect(202);
      expect(failed.body).toEqual({ ...building, status: 'failed', updatedAt: TIMESTAMP });

      const ready = await createVersion(deploymentId, { tag: unique('ready-to-fail') });
      const readyFailed = await stack.http
        .patch(`${base()}/deployment-versions/${ready.id}`)
        .set(stack.auth)
        .send({ status: 'failed', name: 'Broken build' })
        .expect(202);
      expect(readyFailed.body).toEqual({
        ...ready,
        status: 'failed',
        name: 'Broken build',
        updatedAt: TIMESTAMP,
      });
    });

    it.each([
      ['ready', 'building'],
      ['failed', 'ready'],
      ['failed', 'building'],
    ] as const)(
      'refuses the move %s → %s with 409 invalid_status_move and writes nothing',
      async (from, to) => {
        const version = await createVersion(deploymentId, {
          tag: unique(`from-${from}`),
          status: from === 'failed' ? 'building' : from,
        });
        if (from === 'failed') {
          await stack.http
            .patch(`${base()}/deployment-versions/${version.id}`)
            .set(stack.auth)
            .send({ status: 'failed' })
            .expect(202);
        }
        const before = await stack.http
          .get(`${base()}/deployment-versions/${version.id}`)
          .set(stack.auth)
          .expect(200);

        const res = await expectNothingWritten(() =>
          stack.http
            .patch(`${base()}/deployment-versions/${version.id}`)
            .set(stack.auth)
            .send({ status: to }),
        );
        expectProblem(res, 409, 'invalid_status_move');
        expect(res.body.detail).toBe(`A version cannot move from ${from} to ${to}`);
        const after = await stack.http
          .get(`${base()}/deployment-versions/${version.id}`)
          .set(stack.auth)
          .expect(200);
        expect(after.body).toEqual(before.body);
      },
    );

    it('answers 409 for a duplicate tag, by POST and by PATCH, and writes nothing', async () => {
      const existing = await createVersion(deploymentId, { tag: unique('dup'), status: 'building' });
      const posted = await expectNothingWritten(() =>
        stack.http.post(versionsOf(deploymentId)).set(stack.auth).send({ tag: existing.tag }),
      );
      expectProblem(posted, 409, 'duplicate');
      expect(posted.body.detail).toContain(existing.tag);

      const renamed = await createVersion(deploymentId, { tag: unique('rename'), status: 'building' });
      const patched = await expectNothingWritten(() =>
        stack.http
          .patch(`${base()}/deployment-versions/${renamed.id}`)
          .set(stack.auth)
          .send({ tag: existing.tag, status: 'ready' }),
      );
      expectProblem(patched, 409, 'duplicate');

      const otherDeployment = await createDeployment();
      await createVersion(otherDeployment.id, { tag: existing.tag });
    });

    it.each([
      ['an empty tag', { tag: '  ' }, 'body.tag'],
      ['an unknown status', { tag: 'bad-status', status: 'shipped' }, 'body.status'],
      ['config that is not an object', { tag: 'bad-config', config: 'image=web' }, 'body.config'],
    ])('refuses a version with %s with 400 naming the field, and writes nothing', async (_, body, path) => {
      const res = await expectNothingWritten(() =>
        stack.http.post(versionsOf(deploymentId)).set(stack.auth).send(body),
      );
      expectFieldError(res, path);
    });

    it('refuses a PATCH with an unknown status with 400 and writes nothing', async () => {
      const version = await createVersion(deploymentId, { tag: unique('patch-400'), status: 'building' });
      const res = await expectNothingWritten(() =>
        stack.http
          .patch(`${base()}/deployment-versions/${version.id}`)
          .set(stack.auth)
          .send({ status: 'deployed' }),
      );
      expectFieldError(res, 'body.status');
    });

    it('refuses a list filter that is not valid CEL with 400 giving its position', async () => {
      const res = await expectNothingWritten(() =>
        stack.http.get(versionsOf(deploymentId)).query({ cel: 'version.tag ==' }).set(stack.auth),
      );
      expectFieldError(res, 'query.cel', 'line 1, column');
    });

    it('answers 401 without a key and writes nothing', async () => {
      const res = await expectNothingWritten(() =>
        stack.http.post(versionsOf(deploymentId)).send({ tag: 'no-key' }),
      );
      expectProblem(res, 401, 'unauthenticated');
    });

    it("answers 404 for another workspace's deployment and version, and writes nothing", async () => {
      const theirDeployment = await createDeployment({}, other);
      const theirVersion = await createVersion(
        theirDeployment.id,
        { tag: '9.9.9', status: 'building' },
        other,
      );
      const attempts: Attempt[] = [
        [
          'POST a version to their deployment',
          () => stack.http.post(versionsOf(theirDeployment.id)).set(stack.auth).send({ tag: 'intruder' }),
        ],
        ['list their versions', () => stack.http.get(versionsOf(theirDeployment.id)).set(stack.auth)],
        [
          'GET their version',
          () => stack.http.get(`${base()}/deployment-versions/${theirVersion.id}`).set(stack.auth),
        ],
        [
          'PATCH their version',
          () =>
            stack.http
              .patch(`${base()}/deployment-versions/${theirVersion.id}`)
              .set(stack.auth)
              .send({ status: 'ready' }),
        ],
        [
          'PATCH their version via the alias',
          () =>
            stack.http
              .patch(`${base()}/deploymentversions/${theirVersion.id}`)
              .set(stack.auth)
              .send({ status: 'failed' }),
        ],
        [
          'POST in their workspace',
          () =>
            stack.http.post(versionsOf(theirDeployment.id, other)).set(stack.auth).send({ tag: 'intruder' }),
        ],
        [
          'GET in their workspace',
          () => stack.http.get(`${base(other)}/deployment-versions/${theirVersion.id}`).set(stack.auth),
        ],
      ];
      await expectEachNotFound(attempts);
      const unchanged = await stack.http
        .get(`${base(other)}/deployment-versions/${theirVersion.id}`)
        .set(other.auth)
        .expect(200);
      expect(unchanged.body).toEqual(theirVersion);
    });
  });

  describe('list bodies', () => {
    it.each([
      ['environments', () => `${base()}/environments`, 'environment.name != ""'],
      ['deployments', () => `${base()}/deployments`, 'deployment.slug != ""'],
      ['systems', () => `${base()}/systems`, undefined],
    ])('answers the %s list with exactly {items, total, limit, offset}', async (_, path, cel) => {
      const res = await stack.http
        .get(path())
        .query({ limit: 2, offset: 0, ...(cel ? { cel } : {}) })
        .set(stack.auth)
        .expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['items', 'limit', 'offset', 'total']);
      expect(res.body).toMatchObject({ limit: 2, offset: 0 });
    });

    it('answers a filtered versions list with exactly {items, total, limit, offset}', async () => {
      const deployment = await createDeployment();
      await createVersion(deployment.id, { tag: '1.0.0' });
      const res = await stack.http
        .get(`${base()}/deployments/${deployment.id}/versions`)
        .query({ status: 'ready', cel: 'version.tag == "1.0.0"' })
        .set(stack.auth)
        .expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['items', 'limit', 'offset', 'total']);
      expect(res.body).toMatchObject({ total: 1, limit: 50, offset: 0 });
    });
  });
});
