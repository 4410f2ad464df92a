import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { CATALOG_TABLES, recordMaker, TIMESTAMP, UUID } from '../../helpers/recordFixtures';
import {
  expectFieldError,
  expectNothingWritten as expectNothingWrittenIn,
  expectProblem,
  withoutMessage,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Environments over HTTP: create, read by id and by name, replace, list with CEL, delete, validation.
 * 401, another workspace's environment (404) and duplicates (409): contract.test.ts.
 */
describe('environments over HTTP', () => {
  let stack: TestStack;
  const { base, unique, createEnvironment } = recordMaker(() => stack);
  const expectNothingWritten = (request: () => PromiseLike<Response>) =>
    expectNothingWrittenIn(stack, CATALOG_TABLES, request);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

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
    ['a description that is not a string', { name: 'bad-description', description: 42 }, 'body.description'],
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

  it('answers a filtered environments page with exactly {items, total, totalIsExact, nextCursor, limit, offset}', async () => {
    const res = await stack.http
      .get(`${base()}/environments`)
      .query({ limit: 2, offset: 0, cel: 'environment.name != ""' })
      .set(stack.auth)
      .expect(200);
    // More than a page matches, so the page says where the next begins.
    expect(res.body.total).toBeGreaterThan(2);
    expect(Object.keys(res.body).sort()).toEqual([
      'items',
      'limit',
      'nextCursor',
      'offset',
      'total',
      'totalIsExact',
    ]);
    expect(res.body).toMatchObject({ limit: 2, offset: 0 });
  });
});
