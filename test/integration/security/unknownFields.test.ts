import type { EntityManager } from '@mikro-orm/postgresql';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * A body field an endpoint does not take is refused (400, named with its full path, at any depth),
 * never silently dropped (docs/api.md "Conventions").
 */
describe('unknown body fields', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    api = recordsApi(stack);
  });
  afterAll(() => stack.close());

  const count = async (table: string) =>
    (
      await (stack.orm.em.fork() as EntityManager).execute<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM ${table}`,
      )
    )[0]!.n;

  it('refuses them on creates, upserts and patches, and writes nothing', async () => {
    const system = await api.system('Strict');
    const deployment = await api.deployment('strict-svc', system);
    const attempts: [string, string, object, string][] = [
      ['post', '/systems', { name: 'Other', colour: 'blue' }, 'system'],
      [
        'put',
        '/resources/identifier/strict-node',
        { name: 'n', version: 'v1', kind: 'k', owner: 'me' },
        'resource',
      ],
      [
        'post',
        `/deployments/${deployment}/versions`,
        { tag: '1.0.0', dependencies: {}, notes: 'x' },
        'deployment_version',
      ],
      ['post', '/policies', { name: 'p', rules: [], enabledd: true }, 'policy'],
    ];
    for (const [method, path, body, table] of attempts) {
      const before = await count(table);
      const res = await (
        stack.http as unknown as Record<string, (url: string) => ReturnType<typeof stack.http.get>>
      )[method]!(`${api.ws}${path}`)
        .set(stack.auth)
        .send(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.body.errors).toEqual([expect.objectContaining({ message: 'unknown field' })]);
      expect(await count(table)).toBe(before);
    }
    const accepted = await stack.http
      .post(`${api.ws}/systems`)
      .set(stack.auth)
      .send({ name: 'Fine', description: 'known fields only' });
    expect(accepted.status).toBe(202);
  });

  it('refuses them at every depth, naming the full path: a misspelled `sensitive` is never stored in the clear', async () => {
    await api.agent('deep-runner', 'test-runner', { status: 'successful' });
    const attempts: [string, string, object, string, string][] = [
      [
        'put',
        '/resources/identifier/deep-node',
        {
          name: 'n',
          version: 'v1',
          kind: 'k',
          variables: [{ key: 'PASSWORD', value: 'hunter2', sensitve: true }],
        },
        'body.variables[0].sensitve',
        'resource_variable',
      ],
      [
        'post',
        '/variable-sets',
        {
          name: 'deep',
          selector: 'true',
          variables: [{ key: 'PASSWORD', value: 'hunter2', sensitve: true }],
        },
        'body.variables[0].sensitve',
        'variable_set_variable',
      ],
      [
        'post',
        '/deployments',
        { name: 'Deep', slug: 'deep', jobAgents: [{ ref: 'deep-runner', selectr: 'resource.kind == "k"' }] },
        'body.jobAgents[0].selectr',
        'deployment',
      ],
    ];
    for (const [method, path, body, field, table] of attempts) {
      const before = await count(table);
      const res = await (
        stack.http as unknown as Record<string, (url: string) => ReturnType<typeof stack.http.get>>
      )[method]!(`${api.ws}${path}`)
        .set(stack.auth)
        .send(body);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.body.errors).toContainEqual({ path: field, message: 'unknown field' });
      expect(await count(table)).toBe(before);
    }
  });
});
