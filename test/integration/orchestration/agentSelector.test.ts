import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Ctrlplane's deployment spelling (docs/api.md "Records, selectors and release targets") — `jobAgentSelector`
 * (CEL over `jobAgent`) with `jobAgentConfig` — stored and shown as such (secrets redacted), refused next to
 * `jobAgents`, and each agent the selector matches runs a job with that configuration.
 */
describe("a deployment's jobAgentSelector", () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
  });
  afterAll(() => stack.close());

  it('is stored and shown with its configuration, secrets redacted, and refused beside jobAgents', async () => {
    const body = {
      name: 'selected',
      slug: 'selected',
      jobAgentSelector: 'jobAgent.type == "http-pull"',
      jobAgentConfig: { image: 'web', token: 's3cret-token' },
    };
    const created = await stack.http.post(`${api.ws}/deployments`).set(stack.auth).send(body).expect(202);
    expect(created.body).toMatchObject({
      jobAgents: [],
      jobAgentSelector: 'jobAgent.type == "http-pull"',
      jobAgentConfig: { image: 'web', token: { sensitive: true } },
    });
    expect(JSON.stringify(created.body)).not.toContain('s3cret-token');
    for (const bad of [
      { ...body, slug: 'bad-1', name: 'bad-1', jobAgents: [{ ref: 'x' }] },
      { ...body, slug: 'bad-2', name: 'bad-2', jobAgentSelector: 'resource.kind == "x"' },
      { name: 'bad-3', slug: 'bad-3', jobAgentConfig: { image: 'web' } },
    ]) {
      const res = await stack.http.post(`${api.ws}/deployments`).set(stack.auth).send(bad);
      expect(res.status).toBe(400);
    }
  });

  it('gives each matching agent a job with the configuration', async () => {
    await api.agent('sel-a', 'http-pull');
    await api.agent('sel-b', 'http-pull');
    await api.agent('other', 'http-pull');
    const system = await api.system('Selected');
    await api.environment('sel-env', 'resource.metadata["pool"] == "sel"', system);
    const id = (
      await api.send(
        'post',
        '/deployments',
        {
          name: 'sel-app',
          slug: 'sel-app',
          jobAgentSelector: 'jobAgent.name.startsWith("sel-")',
          jobAgentConfig: { image: 'app:1' },
        },
        [202],
      )
    ).id as string;
    await api.send('put', `/systems/${system}/deployments/${id}`, {}, [202]);
    await api.resource('sel-node', 'service', { pool: 'sel' });
    await api.version(id, '1.0.0');
    const jobs = await api.jobsSettleAt(2, `&deploymentId=${id}`);
    const agents = jobs
      .map((job) => (job.dispatchContext as { jobAgent: { name: string } }).jobAgent.name)
      .sort();
    expect(agents).toEqual(['sel-a', 'sel-b']);
    for (const job of jobs) expect(job.dispatchContext.jobAgentConfig).toMatchObject({ image: 'app:1' });
  });
});
