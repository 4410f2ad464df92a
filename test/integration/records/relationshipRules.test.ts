import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Ctrlplane's relationship rules — CRUD with their CEL over `from` and `to` checked — and variable values
 * that read a field of the related resource when a job is created
 * (docs/api.md "Records, selectors and release targets").
 */
describe('relationship rules', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const rule = {
    name: 'app database',
    reference: 'database',
    cel: 'to.kind == "database" && to.metadata["app"] == from.metadata["app"]',
  };

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
  });
  afterAll(() => stack.close());

  const count = async () =>
    (
      await (stack.orm.em.fork() as EntityManager).execute<{ n: number }[]>(
        'SELECT count(*)::int AS n FROM relationship_rule',
      )
    )[0]!.n;

  it('creates, reads, lists, replaces and deletes rules', async () => {
    const created = await stack.http
      .post(`${ws()}/relationship-rules`)
      .set(stack.auth)
      .send(rule)
      .expect(201);
    expect(created.body).toMatchObject({ ...rule, workspaceId: stack.workspaceId, metadata: {} });
    const path = `${ws()}/relationship-rules/${created.body.id}`;
    expect((await stack.http.get(path).set(stack.auth).expect(200)).body).toEqual(created.body);
    const list = await stack.http.get(`${ws()}/relationship-rules`).set(stack.auth).expect(200);
    expect(list.body).toMatchObject({ total: 1, items: [{ id: created.body.id }] });
    const replaced = await stack.http
      .put(path)
      .set(stack.auth)
      .send({ ...rule, description: 'per app', metadata: { team: 'data' } })
      .expect(202);
    expect(replaced.body).toMatchObject({
      id: created.body.id,
      description: 'per app',
      metadata: { team: 'data' },
    });
    const id = randomUUID();
    await stack.http.put(`${ws()}/relationship-rules/${id}`).set(stack.auth).send(rule).expect(202);
    expect(
      (await stack.http.delete(`${ws()}/relationship-rules/${id}`).set(stack.auth).expect(202)).body.id,
    ).toBe(id);
    await stack.http.get(`${ws()}/relationship-rules/${id}`).set(stack.auth).expect(404);
    await stack.http.delete(`${ws()}/relationship-rules/${id}`).set(stack.auth).expect(404);
  });

  it('refuses bad rules and writes nothing', async () => {
    const before = await count();
    for (const body of [
      { ...rule, cel: 'resource.kind == "x"' },
      { ...rule, cel: 'to.kind ==' },
      { ...rule, reference: 'resource' },
      { ...rule, reference: 'has space' },
      { ...rule, name: '' },
      { name: 'x', cel: 'true' },
    ]) {
      const res = await stack.http.post(`${ws()}/relationship-rules`).set(stack.auth).send(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect(await count()).toBe(before);
  });

  it("resolves a variable value that references the related resource's field", async () => {
    await api.agent('related-puller', 'http-pull');
    const system = await api.system('Related');
    await api.environment('related-env', 'resource.kind == "related-service"', system);
    const deployment = await api.deployment('related-app', system, {
      jobAgents: [{ ref: 'related-puller' }],
    });
    const variable = randomUUID();
    await api.send('put', `/deployments/${deployment}/variables/${variable}`, { key: 'DB_HOST' }, [202]);
    await api.send(
      'put',
      `/deployments/${deployment}/variables/${variable}/values/${randomUUID()}`,
      { priority: 0, reference_value: { reference: 'database', path: ['metadata', 'host'] } },
      [202],
    );
    await api.resource('related-db-blog', 'database', { app: 'blog', host: 'db.blog.internal' });
    await api.resource('related-db-shop', 'database', { app: 'shop', host: 'db.shop.internal' });
    await api.resource('related-shop', 'related-service', { app: 'shop' });
    await api.resource('related-lonely', 'related-service', { app: 'none' });
    await api.version(deployment, '1.0.0');
    const jobs = await api.jobsSettleAt(2, `&deploymentId=${deployment}`);
    const variablesOf = (job: (typeof jobs)[number]) =>
      (job.dispatchContext as { variables: Record<string, unknown> }).variables;
    const byResource = new Map(
      jobs.map((job) => [
        (job.dispatchContext as { resource: { identifier: string } }).resource.identifier,
        job,
      ]),
    );
    expect(variablesOf(byResource.get('related-shop')!)).toEqual({ DB_HOST: 'db.shop.internal' });
    expect(variablesOf(byResource.get('related-lonely')!)).toEqual({});
  });
});
