import { randomUUID } from 'node:crypto';
import { openTree, jobSecrets } from '../../../db/sensitiveValues';
import { recordsApi, type Job } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Variable resolution (docs/design.md "Decisions": variable precedence), as a created job carries it in its dispatch context: the
 * resource's own variable, then the deployment's values whose selector matches (highest priority
 * first), then the default; references into workspace, deployment, environment, resource and version;
 * keys nothing resolves left out; sensitive values sealed in storage and hidden in responses.
 */
describe('variables in the dispatch context', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let jobs: Map<string, Job & { stored: Record<string, unknown> }>;

  /** Resources, one per case, all in one environment. */
  const resources: Record<string, { metadata: Record<string, string>; variables?: object[] }> = {
    plain: { metadata: { tier: 'web', region: 'eu-west-1' } },
    eu: { metadata: { tier: 'web', region: 'eu-central-1', zone: 'a' } },
    overriding: {
      metadata: { tier: 'web', region: 'us-east-1' },
      variables: [
        { key: 'LOG_LEVEL', value: 'trace', sensitive: false },
        { key: 'API_TOKEN', value: 'resource-secret', sensitive: true },
      ],
    },
    batch: { metadata: { tier: 'batch', region: 'ap-south-1' } },
  };

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('puller', 'http-pull');
    const system = await api.system('Vars');
    await api.environment('staging', 'resource.metadata["tier"] != ""', system);
    const deployment = await api.deployment('checkout', system, {
      resourceSelector: 'resource.kind == "service"',
      jobAgents: [{ ref: 'puller', config: {} }],
    });
    await stack.http
      .put(`${api.ws}/deployments/${deployment}`)
      .set(stack.auth)
      .send({
        name: 'checkout',
        slug: 'checkout',
        metadata: { team: 'payments' },
        jobAgents: [{ ref: 'puller' }],
      })
      .expect(202);
    for (const [name, spec] of Object.entries(resources)) {
      await api.resource(name, 'service', spec.metadata, spec.variables ? { variables: spec.variables } : {});
    }

    const variable = async (key: string, body: object, values: object[]) => {
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
      { priority: 10, value: 'debug', resource_selector: 'resource.metadata["region"].startsWith("eu-")' },
      { priority: 20, value: 'warn', resource_selector: 'resource.metadata["zone"] == "a"' },
    ]);
    await variable('REGION', {}, [
      { priority: 1, reference_value: { reference: 'resource', path: ['metadata', 'region'] } },
    ]);
    await variable('ZONE', {}, [
      { priority: 5, reference_value: { reference: 'resource', path: ['metadata', 'zone'] } },
      { priority: 1, value: 'none' },
    ]);
    await variable('ENV_NAME', {}, [
      { priority: 0, reference_value: { reference: 'environment', path: ['name'] } },
    ]);
    await variable('TAG', {}, [{ priority: 0, reference_value: { reference: 'version', path: ['tag'] } }]);
    await variable('TEAM', {}, [
      { priority: 0, reference_value: { reference: 'deployment', path: ['metadata', 'team'] } },
    ]);
    await variable('WORKSPACE', {}, [
      { priority: 0, reference_value: { reference: 'workspace', path: ['slug'] } },
    ]);
    await variable('ONLY_BATCH', {}, [
      { priority: 0, value: 'yes', resource_selector: 'resource.metadata["tier"] == "batch"' },
    ]);
    await variable('NOWHERE', {}, [
      { priority: 0, reference_value: { reference: 'resource', path: ['metadata', 'missing'] } },
    ]);
    await variable('API_TOKEN', { sensitive: true }, [{ priority: 0, value: 'deployment-secret' }]);
    await variable('REPLICAS', { default_value: 3 }, []);

    await api.version(deployment, '2.4.0');
    const created = await api.jobsSettleAt(Object.keys(resources).length, '&status=queued');
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
    ['plain', 'LOG_LEVEL', 'debug', 'the matching value beats the default'],
    ['eu', 'LOG_LEVEL', 'warn', 'the higher priority of two matching values wins'],
    ['overriding', 'LOG_LEVEL', 'trace', 'the resource’s own variable beats every value'],
    ['batch', 'LOG_LEVEL', 'info', 'with no matching value, the default'],
    ['plain', 'REGION', 'eu-west-1', 'a reference into the resource'],
    ['eu', 'ZONE', 'a', 'a reference that resolves'],
    ['plain', 'ZONE', 'none', 'a reference that leads nowhere falls through to the next value'],
    ['plain', 'ENV_NAME', 'staging', 'a reference into the environment'],
    ['plain', 'TAG', '2.4.0', 'a reference into the version'],
    ['plain', 'TEAM', 'payments', 'a reference into the deployment'],
    ['plain', 'WORKSPACE', 'test-workspace', 'a reference into the workspace'],
    ['batch', 'ONLY_BATCH', 'yes', 'a value for the resources its selector matches'],
    ['plain', 'REPLICAS', 3, 'a default of another JSON type'],
  ] as [string, string, unknown, string][])('%s: %s = %j (%s)', (resource, key, expected) => {
    expect(variablesOf(resource)[key]).toEqual(expected);
  });

  it.each([
    ['plain', 'ONLY_BATCH'],
    ['plain', 'NOWHERE'],
  ])('%s: %s is left out when nothing resolves it', (resource, key) => {
    expect(variablesOf(resource)).not.toHaveProperty(key);
  });

  it('hides sensitive values in responses and stores them sealed', () => {
    for (const [resource, secret] of [
      ['plain', 'deployment-secret'],
      ['overriding', 'resource-secret'],
    ] as const) {
      const job = jobs.get(resource)!;
      expect(variablesOf(resource).API_TOKEN).toEqual({ sensitive: true });
      expect(job.dispatchContext.jobAgentConfig).toMatchObject({ API_TOKEN: { sensitive: true } });
      expect(JSON.stringify(job.stored)).not.toContain(secret);
      const opened = openTree(
        jobSecrets(stack.secrets, { workspaceId: stack.workspaceId, releaseId: job.releaseId }),
        job.stored,
      ) as { variables: Record<string, unknown> };
      expect(opened.variables.API_TOKEN).toBe(secret);
    }
  });

  it('merges variables into the job configuration beneath the agent entries, over the release context', () => {
    const job = jobs.get('eu')!;
    expect(job.dispatchContext.jobAgentConfig).toMatchObject({
      LOG_LEVEL: 'warn',
      REGION: 'eu-central-1',
      environmentName: 'staging',
      resourceIdentifier: 'eu',
      versionTag: '2.4.0',
    });
    expect(job.dispatchContext.inputs).toEqual({
      jobId: job.id,
      versionTag: '2.4.0',
      environmentName: 'staging',
      resourceIdentifier: 'eu',
    });
  });
});
