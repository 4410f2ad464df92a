import { createdJobStatus, planReleaseJobs, type JobPlanInput, type PlanAgent } from '../../domain/jobPlan';

const SEALED = (value: unknown) => ({ sealed: value });

function tools() {
  let next = 0;
  return { newId: () => `id-${++next}`, seal: SEALED };
}

const PULLER: PlanAgent = { id: 'a-pull', name: 'puller', type: 'http-pull', config: { leaseSeconds: 60 } };
const ARGO: PlanAgent = {
  id: 'a-argo',
  name: 'argo',
  type: 'argo-cd',
  config: { api_key: 'k', template: 't' },
};

function input(
  overrides: Partial<JobPlanInput['records']['deployment']> = {},
  extra: Partial<JobPlanInput> = {},
) {
  const base: JobPlanInput = {
    release: { id: 'rel-1', createdAt: '2026-11-24T10:00:00.000Z' },
    records: {
      workspace: { id: 'w', name: 'Main', slug: 'main' },
      deployment: {
        id: 'd',
        name: 'API',
        slug: 'api',
        description: null,
        metadata: {},
        resourceSelector: null,
        jobAgents: [{ ref: 'puller', config: { region: 'eu' } }],
        ...overrides,
      },
      environment: { id: 'e', name: 'prod', description: null, metadata: {} },
      resource: {
        id: 'r',
        name: 'node-1',
        version: 'v1',
        kind: 'service',
        identifier: 'node-1',
        config: {},
        metadata: { tier: 'gold' },
      },
      version: {
        id: 'v',
        tag: '1.2.0',
        name: null,
        status: 'ready',
        config: {},
        jobAgentConfig: { region: 'us' },
        metadata: {},
        createdAt: '2026-11-24T09:00:00.000Z',
      },
    },
    variables: {
      definitions: [
        {
          key: 'replicas',
          sensitive: false,
          defaultValue: 1,
          values: [
            {
              id: 'x',
              priority: 1,
              value: 5,
              resourceSelector: 'resource.metadata["tier"] == "gold"',
              sensitive: false,
            },
          ],
        },
        { key: 'password', sensitive: true, defaultValue: 'hunter2', values: [] },
      ],
      resource: [],
      sets: [],
    },
    agents: [PULLER, ARGO],
    verifications: [],
  };
  return { ...base, ...extra };
}

describe('planReleaseJobs', () => {
  it('gives a pull agent one queued job: variables resolved, configuration merged version first, secrets sealed', () => {
    const [job, ...others] = planReleaseJobs(input(), tools());
    expect(others).toEqual([]);
    expect(job).toMatchObject({
      id: 'id-1',
      agent: { id: 'a-pull', name: 'puller', type: 'http-pull' },
      agentEntry: 0,
      status: 'queued',
      message: null,
    });
    expect(job!.config).toMatchObject({ region: 'us', leaseSeconds: 60, replicas: 5, releaseId: 'rel-1' });
    expect(job!.config.password).toEqual({ sealed: 'hunter2' });
    expect(job!.dispatchContext).toMatchObject({
      variables: { replicas: 5, password: { sealed: 'hunter2' } },
      inputs: { jobId: 'id-1', versionTag: '1.2.0', environmentName: 'prod', resourceIdentifier: 'node-1' },
      release: { id: 'rel-1', versionId: 'v', deploymentId: 'd', environmentId: 'e', resourceId: 'r' },
    });
    // Ctrlplane's DispatchContext: the version with its configuration (secret keys sealed), the release with its
    // version, variables in clear but the sensitive ones, which it names only.
    expect((job!.dispatchContext.version as Record<string, unknown>).jobAgentConfig).toEqual({
      region: 'us',
    });
    expect(job!.dispatchContext.release).toMatchObject({
      version: { id: 'v', tag: '1.2.0', deploymentId: 'd' },
      variables: { replicas: 5 },
      encryptedVariables: ['password'],
      releaseTarget: { resourceId: 'r', environmentId: 'e', deploymentId: 'd' },
    });
    expect(job!.dispatchContext.jobAgent).toMatchObject({
      id: 'a-pull',
      config: expect.any(Object),
      metadata: {},
    });
  });

  it('resolves the variable sets that match the release target, sealing their sensitive values', () => {
    const set = (id: string, selector: string, variables: object[]) => ({
      id,
      name: id,
      priority: 0,
      selector,
      variables: variables as never,
    });
    const base = input();
    const [job] = planReleaseJobs(
      {
        ...base,
        variables: {
          ...base.variables,
          sets: [
            set('prod-api', 'environment.name == "prod" && deployment.slug == "api"', [
              { key: 'region', value: 'eu', sensitive: false },
              { key: 'dbPassword', value: 's3cret', sensitive: true },
            ]),
            set('staging', 'environment.name == "staging"', [
              { key: 'debug', value: true, sensitive: false },
            ]),
          ],
        },
      },
      tools(),
    );
    expect(job!.dispatchContext.variables).toEqual({
      replicas: 5,
      password: { sealed: 'hunter2' },
      dbPassword: { sealed: 's3cret' },
      region: 'eu',
    });
    expect(job!.config.dbPassword).toEqual({ sealed: 's3cret' });
  });

  it('creates a push agent job pending, its credentials sealed', () => {
    const [job] = planReleaseJobs(input({ jobAgents: [{ ref: 'a-argo', config: {} }] }), tools());
    expect(job!.status).toBe('pending');
    expect(job!.config.api_key).toEqual({ sealed: 'k' });
    expect(job!.config.template).toBe('t');
  });

  it('skips entries whose selector misses the resource, and says so when none is left', () => {
    const missing = planReleaseJobs(
      input({ jobAgents: [{ ref: 'puller', config: {}, selector: 'resource.kind == "database"' }] }),
      tools(),
    );
    expect(missing).toEqual([
      expect.objectContaining({
        agent: null,
        status: 'invalid_job_agent',
        message: 'no job agent of deployment api serves resource node-1',
        verifications: [],
      }),
    ]);
    const none = planReleaseJobs(input({ jobAgents: [] }), tools());
    expect(none[0]!.message).toBe('deployment api has no job agent');
  });

  it('answers an unknown agent with invalid_job_agent and one job per matching entry otherwise', () => {
    const jobs = planReleaseJobs(
      input({
        jobAgents: [
          { ref: 'ghost', config: {} },
          { ref: 'puller', config: {} },
        ],
      }),
      tools(),
    );
    expect(jobs.map((job) => [job.agentEntry, job.status, job.message])).toEqual([
      [0, 'invalid_job_agent', 'job agent "ghost" was not found'],
      [1, 'queued', null],
    ]);
  });

  it('gives each runnable job its own verifications', () => {
    const spec = { policyId: 'p', ruleId: 'rule', triggerOn: 'jobSuccess', metrics: [] };
    const jobs = planReleaseJobs(
      input(
        {
          jobAgents: [
            { ref: 'puller', config: {} },
            { ref: 'nobody', config: {} },
          ],
        },
        { verifications: [spec] },
      ),
      tools(),
    );
    expect(jobs[0]!.verifications).toEqual([{ ...spec, id: 'id-3' }]);
    expect(jobs[1]!.verifications).toEqual([]);
  });
});

describe('createdJobStatus', () => {
  it('queues only a pull agent job at creation', () => {
    expect(createdJobStatus('http-pull')).toBe('queued');
    for (const type of ['github-app', 'argo-cd', 'tfe', 'test-runner'] as const) {
      expect(createdJobStatus(type)).toBe('pending');
    }
  });
});
