import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { settled } from '../../helpers/settled';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * The orchestration issue's scenario: 4 resources {qa, dev} × {service, database}, 2 deployments
 * selecting by kind, 2 environments selecting by metadata, one http-pull agent.
 */
describe('release orchestration scenario', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    ids.agent = await api.agent('puller', 'http-pull');
    const system = await api.system('Shop');
    ids.qa = await api.environment('qa', 'resource.metadata["env"] == "qa"', system);
    ids.dev = await api.environment('dev', 'resource.metadata["env"] == "dev"', system);
    for (const [name, kind] of [
      ['api', 'service'],
      ['db', 'database'],
    ] as const) {
      ids[name] = await api.deployment(name, system, {
        resourceSelector: `resource.kind == "${kind}"`,
        jobAgents: [{ ref: 'puller', config: { image: name } }],
      });
    }
    for (const env of ['qa', 'dev']) {
      for (const kind of ['service', 'database'])
        ids[`${env}-${kind}`] = await api.resource(`${env}-${kind}`, kind, { env });
    }
    ids.system = system;
  });
  afterAll(() => stack.close());

  const succeedAll = async (jobs: { id: string }[]) => {
    for (const job of jobs) await api.report(job.id, 'successful');
  };

  it('gives a ready version of each deployment exactly 4 queued jobs, one per release target', async () => {
    await api.version(ids.api!, '1.0.0');
    await api.version(ids.db!, '1.0.0');
    const jobs = await api.jobsSettleAt(4, '&status=queued');
    const targets = jobs.map((job) => `${job.resourceId}/${job.environmentId}/${job.deploymentId}`).sort();
    expect(targets).toEqual(
      [
        `${ids['qa-service']}/${ids.qa}/${ids.api}`,
        `${ids['dev-service']}/${ids.dev}/${ids.api}`,
        `${ids['qa-database']}/${ids.qa}/${ids.db}`,
        `${ids['dev-database']}/${ids.dev}/${ids.db}`,
      ].sort(),
    );
    expect(new Set(jobs.map((job) => job.releaseId)).size).toBe(4);
  });

  it('makes each succeeded release the current release of its target', async () => {
    await succeedAll(await api.jobs('&status=queued'));
    const key = `${ids['qa-service']}-${ids.qa}-${ids.api}`;
    const state = await eventually(
      async () => {
        const found = await api.get<{
          currentRelease: { id: string } | null;
          latestJob: { job: { status: string } };
        }>(`/release-targets/${key}/state`);
        return found.currentRelease ? found : undefined;
      },
      { what: 'the current release' },
    );
    expect(state.latestJob.job.status).toBe('successful');
    await eventually(async () => (await api.releases('&phase=succeeded')).length === 4, {
      what: '4 succeeded releases',
    });
  });

  it('gives a new version of one deployment exactly 2 new jobs', async () => {
    await api.version(ids.api!, '1.1.0');
    const jobs = await api.jobsSettleAt(2, '&status=queued');
    expect(jobs.map((job) => job.resourceId).sort()).toEqual([ids['qa-service'], ids['dev-service']].sort());
    expect(jobs.every((job) => job.deploymentId === ids.api)).toBe(true);
    await succeedAll(jobs);
    await api.jobsSettleAt(6, '&status=successful');
  });

  it('gives a new matching resource jobs for it alone, of the newest version', async () => {
    const resource = await api.resource('qa-service-2', 'service', { env: 'qa' });
    const [job] = await api.jobsSettleAt(1, '&status=queued');
    expect(job!.resourceId).toBe(resource);
    expect((job!.dispatchContext.version as { tag: string }).tag).toBe('1.1.0');
    await succeedAll([job!]);
    await api.jobsSettleAt(7, '&status=successful');
  });

  it('creates nothing when a resource is upserted unchanged', async () => {
    await api.resource('qa-service-2', 'service', { env: 'qa' });
    await settled(stack);
    expect(await api.jobs()).toHaveLength(7);
  });

  it('ends the jobs of a deployment with no job agent in invalid_job_agent, with a message', async () => {
    const bare = await api.deployment('bare', ids.system!, {
      resourceSelector: 'resource.kind == "database"',
    });
    await api.version(bare, '0.1.0');
    const jobs = await api.jobsSettleAt(2, `&deploymentId=${bare}`);
    expect(jobs.every((job) => job.status === 'invalid_job_agent')).toBe(true);
    expect(jobs[0]!.message).toMatch(/has no job agent/);
    await eventually(async () => (await api.releases(`&deploymentId=${bare}&phase=failed`)).length === 2, {
      what: 'the releases to fail',
    });
  });
});
