import { eventually } from '../helpers/eventually';
import { startTestStack, type TestStack } from '../helpers/stack';

describe('version rollout: HTTP → MikroORM → outbox → Temporal workflow → activity → HTTP', () => {
  let stack: TestStack;
  let deploymentId: string;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  beforeAll(async () => {
    stack = await startTestStack();
    const res = await stack.http
      .post(`${ws()}/deployments`)
      .set(stack.auth)
      .send({ name: 'Checkout', slug: 'checkout', metadata: { team: 'payments' } })
      .expect(202);
    deploymentId = res.body.id;
  });
  afterAll(() => stack.close());

  it('answers a deployment create with 202 and makes it readable at once', async () => {
    const res = await stack.http.get(`${ws()}/deployments/${deploymentId}`).set(stack.auth).expect(200);
    expect(res.body).toMatchObject({ id: deploymentId, slug: 'checkout', metadata: { team: 'payments' } });
  });

  it('rolls out a version created ready, through a workflow found by its search attributes', async () => {
    const created = await stack.http
      .post(`${ws()}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .send({ tag: '1.0.0' })
      .expect(200);
    expect(created.body).toMatchObject({
      status: 'ready',
      rollout: { status: 'pending', completedAt: null },
    });

    const done = await eventually(
      async () => {
        const res = await stack.http.get(`${ws()}/deployment-versions/${created.body.id}`).set(stack.auth);
        return res.body.rollout?.status === 'completed' ? res.body : undefined;
      },
      { what: 'the rollout to complete' },
    );
    expect(done.rollout.completedAt).toEqual(expect.any(String));

    const found = await eventually(
      async () => {
        const executions = [];
        for await (const execution of stack.temporal.workflow.list({
          query: `FlightdeckVersionId = '${created.body.id}' AND FlightdeckDeploymentId = '${deploymentId}'`,
        })) {
          executions.push(execution);
        }
        // Visibility is eventually consistent: wait until it shows the run finished.
        return executions.length > 0 && executions.every((e) => e.status.name === 'COMPLETED')
          ? executions
          : undefined;
      },
      { what: 'the completed rollout workflow in visibility' },
    );
    expect(found).toHaveLength(1);
    expect(found[0]!.workflowId).toBe(`version-rollout/${created.body.id}`);
    expect(found[0]!.status.name).toBe('COMPLETED');
  });

  it('does not roll out a version that is still building', async () => {
    const created = await stack.http
      .post(`${ws()}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .send({ tag: '2.0.0-rc1', status: 'building' })
      .expect(200);
    expect(created.body.rollout).toBeNull();
    const rows = await stack.orm.em
      .fork()
      .getConnection()
      .execute('SELECT count(*)::int AS count FROM outbox');
    expect(rows).toEqual([{ count: 0 }]);
  });

  it('answers a duplicate tag with 409 and writes nothing', async () => {
    const before = await stack.http
      .get(`${ws()}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .expect(200);
    const res = await stack.http
      .post(`${ws()}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .send({ tag: '1.0.0' })
      .expect(409);
    expect(res.body.code).toBe('duplicate');
    const after = await stack.http
      .get(`${ws()}/deployments/${deploymentId}/versions`)
      .set(stack.auth)
      .expect(200);
    expect(after.body.total).toBe(before.body.total);
  });

  it('lists versions newest first with pagination', async () => {
    const res = await stack.http
      .get(`${ws()}/deployments/${deploymentId}/versions?limit=1&offset=0`)
      .set(stack.auth)
      .expect(200);
    expect(res.body).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(res.body.items.map((v: { tag: string }) => v.tag)).toEqual(['2.0.0-rc1']);
  });
});
