import { randomUUID } from 'node:crypto';
import { openTree, jobSecrets } from '../../../db/sensitiveValues';
import { recordsApi, type Job } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Variable sets through the real release flow: a set whose selector matches a release target gives
 * its values to the target's job, beneath the resource's own variables and the deployment values
 * that match, above the deployment variable's default; the higher-priority set wins; sets that do
 * not match are ignored; sensitive set values stay sealed.
 */
describe('variable sets in the dispatch context', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let jobs: Map<string, Job & { stored: Record<string, unknown> }>;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('puller', 'http-pull');
    const system = await api.system('Sets');
    await api.environment('production', 'resource.metadata["region"] != ""', system);
    const deployment = await api.deployment('checkout', system, {
      resourceSelector: 'resource.kind == "service"',
      jobAgents: [{ ref: 'puller', config: {} }],
    });
    await api.resource('eu-1', 'service', { region: 'eu' });
    await api.resource('us-1', 'service', { region: 'us' });
    await api.resource(
      'eu-own',
      'service',
      { region: 'eu' },
      { variables: [{ key: 'LOG_LEVEL', value: 'trace', sensitive: false }] },
    );

    const variable = async (key: string, body: object, values: object[] = []) => {
      const id = randomUUID();
      await api.send('put', `/deployments/${deployment}/variables/${id}`, { key, ...body }, [202]);
      for (const value of values)
        await api.send(
          'put',
          `/deployments/${deployment}/variables/${id}/values/${randomUUID()}`,
          value,
          [202],
        );
    };
    await variable('LOG_LEVEL', { default_value: 'info' }, [
      { priority: 10, value: 'debug', resource_selector: 'resource.metadata["tier"] == "batch"' },
    ]);
    await variable('REPLICAS', { default_value: 1 });
    await variable('PINNED', {}, [{ priority: 0, value: 'from-value' }]);

    const set = (body: object) => api.send('post', '/variable-sets', body, [201]);
    await set({
      name: 'eu-base',
      priority: 1,
      selector: 'resource.metadata["region"] == "eu"',
      variables: [
        { key: 'LOG_LEVEL', value: 'warn' },
        { key: 'REPLICAS', value: 3 },
        { key: 'PINNED', value: 'from-set' },
        { key: 'SET_ONLY', value: 'eu-base' },
        { key: 'LIMITS', value: { object: { cpu: '500m' } } },
        { key: 'REGION', value: { reference: 'resource', path: ['metadata', 'region'] } },
        { key: 'DB_PASSWORD', value: 's3cret', sensitive: true },
      ],
    });
    await set({
      name: 'eu-production',
      priority: 5,
      selector: 'resource.metadata["region"] == "eu" && environment.name == "production"',
      variables: [{ key: 'SET_ONLY', value: 'eu-production' }],
    });
    await set({
      name: 'billing-only',
      priority: 100,
      selector: 'deployment.slug == "billing"',
      variables: [
        { key: 'LOG_LEVEL', value: 'error' },
        { key: 'BILLING', value: true },
      ],
    });

    await api.version(deployment, '1.0.0');
    const created = await api.jobsSettleAt(3, '&status=queued');
    const rows = await stack.orm.em
      .fork()
      .getConnection()
      .execute<{ id: string; dispatch_context: Record<string, unknown> }[]>(
        'SELECT id, dispatch_context FROM job',
      );
    const byId = new Map(rows.map((row) => [row.id, row.dispatch_context]));
    jobs = new Map(
      created.map((job) => [
        (job.dispatchContext.resource as { identifier: string }).identifier,
        { ...job, stored: byId.get(job.id)! },
      ]),
    );
  });
  afterAll(() => stack.close());

  const variablesOf = (resource: string) =>
    jobs.get(resource)!.dispatchContext.variables as Record<string, unknown>;

  it.each([
    ['eu-1', 'LOG_LEVEL', 'warn', "a matching set beats the deployment variable's default"],
    ['eu-1', 'REPLICAS', 3, 'a set value of another JSON type'],
    ['eu-1', 'PINNED', 'from-value', 'a matching deployment value beats every set'],
    ['eu-1', 'SET_ONLY', 'eu-production', 'the higher-priority set wins, for a key only sets define'],
    ['eu-1', 'LIMITS', { cpu: '500m' }, "an object given in Ctrlplane's {object} form"],
    ['eu-1', 'REGION', 'eu', 'a set reference into the resource'],
    ['eu-own', 'LOG_LEVEL', 'trace', 'the resource’s own variable beats every set'],
    ['eu-own', 'SET_ONLY', 'eu-production', 'sets still give the keys the resource does not have'],
    ['us-1', 'LOG_LEVEL', 'info', 'with no matching set, the default'],
    ['us-1', 'REPLICAS', 1, 'with no matching set, the default'],
  ] as [string, string, unknown, string][])('%s: %s = %j (%s)', (resource, key, expected) => {
    expect(variablesOf(resource)[key]).toEqual(expected);
  });

  it('ignores the sets whose selector does not match the target', () => {
    for (const resource of ['eu-1', 'us-1', 'eu-own'])
      expect(variablesOf(resource)).not.toHaveProperty('BILLING');
    for (const key of ['SET_ONLY', 'LIMITS', 'REGION', 'DB_PASSWORD'])
      expect(variablesOf('us-1')).not.toHaveProperty(key);
  });

  it('keeps a sensitive set value sealed in the job and hidden in responses', () => {
    const job = jobs.get('eu-1')!;
    expect(variablesOf('eu-1').DB_PASSWORD).toEqual({ sensitive: true });
    expect(job.dispatchContext.jobAgentConfig).toMatchObject({ DB_PASSWORD: { sensitive: true } });
    expect(JSON.stringify(job.stored)).not.toContain('s3cret');
    const opened = openTree(
      jobSecrets(stack.secrets, { workspaceId: stack.workspaceId, releaseId: job.releaseId }),
      job.stored,
    ) as { variables: Record<string, unknown> };
    expect(opened.variables.DB_PASSWORD).toBe('s3cret');
  });
});
