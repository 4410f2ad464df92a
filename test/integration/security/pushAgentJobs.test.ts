import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Only an http-pull agent's jobs are handed out or given back (docs/agents.md "Writing your own agent"). A
 * push agent's job carries that agent's decrypted endpoint and credentials: the legacy queue, a claim and a
 * requeue of it are refused and show nothing of its configuration.
 */
describe('push agents jobs are never handed out', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  it('refuses the legacy queue, a claim and a requeue for a push agent', async () => {
    const api = recordsApi(stack);
    const argo = await api.agent('argo-secret', 'argo-cd', {
      server_url: 'https://argo.invalid',
      api_key: 'argo-stored-secret',
    });
    const runner = await api.agent('slow-runner', 'test-runner', { delaySeconds: 3600 });
    const system = await api.system('Push only');
    await api.environment('env-push', 'resource.metadata["pool"] == "push"', system);
    const deploymentId = await api.deployment('svc-push', system, { jobAgents: [{ ref: 'slow-runner' }] });
    await api.resource('push-node', 'service', { pool: 'push' });
    await api.version(deploymentId, '1.0.0');
    const [job] = await api.jobsSettleAt(1, `&status=in_progress&jobAgentId=${runner}`, 'the running job');

    const answers = [
      await stack.http.get(`/api/v1/job-agents/${argo}/queue/next`).set(stack.auth),
      await stack.http.get(`/api/v1/job-agents/${runner}/queue/next`).set(stack.auth),
      await stack.http.post(`${api.ws}/job-agents/${runner}/jobs/${job!.id}/claim`).set(stack.auth),
      await stack.http.post(`${api.ws}/jobs/${job!.id}/requeue`).set(stack.auth).send({}),
    ];
    for (const res of answers) {
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe('not_pull_agent');
      expect(JSON.stringify(res.body)).not.toContain('argo-stored-secret');
    }
    const [after] = await api.jobs(`&jobAgentId=${runner}`);
    expect(after!.status).toBe('in_progress');
  });
});
