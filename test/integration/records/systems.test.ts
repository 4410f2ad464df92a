import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  CATALOG_TABLES,
  deploymentFieldsOf as fieldsOf,
  recordMaker,
  sqlOf,
  TIMESTAMP,
  UUID,
} from '../../helpers/recordFixtures';
import {
  expectFieldError,
  expectNothingWritten as expectNothingWrittenIn,
  expectProblem,
  withoutMessage,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Systems over HTTP: create, list, replace, link deployments and environments, delete, validation.
 * 401, another workspace's system (404) and duplicates (409): contract.test.ts.
 */
describe('systems over HTTP', () => {
  let stack: TestStack;
  const { base, createSystem, createEnvironment, createDeployment } = recordMaker(() => stack);
  const sql = sqlOf(() => stack);
  const expectNothingWritten = (request: () => PromiseLike<Response>) =>
    expectNothingWrittenIn(stack, CATALOG_TABLES, request);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

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

    const fetched = await stack.http.get(`${base()}/systems/${created.body.id}`).set(stack.auth).expect(200);
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

    const secondUnlink = await expectNothingWritten(() => stack.http.delete(deploymentLink).set(stack.auth));
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

  it('answers the systems list with exactly {items, total, limit, offset}', async () => {
    const res = await stack.http
      .get(`${base()}/systems`)
      .query({ limit: 2, offset: 0 })
      .set(stack.auth)
      .expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['items', 'limit', 'offset', 'total']);
    expect(res.body).toMatchObject({ limit: 2, offset: 0 });
  });
});
