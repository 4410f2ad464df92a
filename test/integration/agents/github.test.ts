import { createHmac, generateKeyPairSync } from 'node:crypto';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { pushAgents, type PushJob } from '../../helpers/push';
import { startTestStack, type TestStack } from '../../helpers/stack';
import { FakeGithub, INSTALLATION_TOKEN } from '../../fakes/github';

/**
 * docs/behaviour.md "Job agent entry" (workflow runner) and "Push agents" (the inputs a
 * workflow run receives): the github-app agent, end to end through the API and the release workflow against a
 * fake GitHub that checks what it is sent.
 */
describe('the GitHub workflow runner', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const APP_ID = 4242;
  const INSTALLATION_ID = 77;
  const TOKEN = 'ghp_personalAccessTokenForTests';
  let stack: TestStack;
  let github: FakeGithub;
  let api: ReturnType<typeof recordsApi>;
  let agents: ReturnType<typeof pushAgents>;

  beforeAll(async () => {
    stack = await startTestStack();
    github = await new FakeGithub({
      app: { appId: APP_ID, installationId: INSTALLATION_ID, publicKey },
      token: TOKEN,
    }).start();
    api = recordsApi(stack);
    agents = pushAgents(stack, await api.system('GitHub'));
  });
  afterAll(async () => {
    await github.close();
    await stack.close();
  });

  const deployWith = (name: string, config: object) =>
    agents.deploy(name, 'github-app', {
      owner: 'acme',
      repo: 'deploys',
      workflow_id: 42,
      base_url: github.url,
      ...config,
    });
  const jobOf = (jobId: string) => agents.jobOf(jobId);
  const waitForJob = (jobId: string, predicate: (job: PushJob) => boolean, what: string) =>
    agents.waitForJob(jobId, predicate, what);
  const runOf = (jobId: string) =>
    eventually(() => github.runs.find((run) => run.display_title.includes(jobId)), {
      what: 'the dispatched run',
    });

  it('authenticates as the app, dispatches the four inputs, links the run and follows it to success', async () => {
    const { job } = await deployWith('gh-app', {
      app_id: APP_ID,
      installation_id: INSTALLATION_ID,
      private_key: privateKey,
    });
    const run = await runOf(job.id);
    // The installation token was bought with a JWT the app's public key verifies (the fake checks it).
    expect(github.requestsTo(`/app/installations/${INSTALLATION_ID}/access_tokens`)).toHaveLength(1);
    const [dispatch] = github.requestsTo('/actions/workflows/42/dispatches');
    expect(dispatch).toMatchObject({
      authorization: `Bearer ${INSTALLATION_TOKEN}`,
      body: {
        ref: 'main',
        inputs: {
          job_id: job.id,
          version_tag: '1.0.0',
          environment_name: 'env-gh-app',
          resource_identifier: 'gh-app-node',
        },
      },
    });
    await waitForJob(job.id, (current) => current.status === 'triggered', 'the job triggered');

    const linked = await waitForJob(
      job.id,
      (current) => current.externalId === String(run.id),
      'the run linked',
    );
    expect(linked.message).toContain(run.html_url);
    github.setRun(run.id, { status: 'in_progress', conclusion: null });
    await waitForJob(job.id, (current) => current.status === 'in_progress', 'the job in progress');
    github.setRun(run.id, { status: 'completed', conclusion: 'success' });
    await waitForJob(job.id, (current) => current.status === 'successful', 'the job successful');

    const release = await api.releaseWith(
      (candidate) => candidate.id === job.releaseId && candidate.phase === 'succeeded',
      'the release to succeed',
    );
    const state = await api.get<{ currentRelease: { id: string } | null }>(
      `/release-targets/${release.releaseTargetKey}/state`,
    );
    expect(state.currentRelease?.id).toBe(release.id);
    // One token served every call.
    expect(github.requestsTo('/access_tokens')).toHaveLength(1);
  }, 90_000);

  it('never dispatches twice when GitHub ran the first dispatch but its answer was lost', async () => {
    github.loseNextAnswers('dispatch');
    const { job } = await deployWith('gh-lost', { token: TOKEN });
    const run = await runOf(job.id);
    await waitForJob(job.id, (current) => current.externalId === String(run.id), 'the run linked');
    const dispatches = github
      .requestsTo('/actions/workflows/42/dispatches')
      .filter((request) => (request.body as { inputs: { job_id: string } }).inputs.job_id === job.id);
    expect(dispatches).toHaveLength(1);
    expect(github.runs.filter((candidate) => candidate.display_title.includes(job.id))).toHaveLength(1);
  }, 90_000);

  it('retries a dispatch after a 500, and a failed run fails the job and the release', async () => {
    github.failNext('dispatch', 500);
    const { job } = await deployWith('gh-retry', { token: TOKEN });
    const run = await runOf(job.id);
    const attempts = github
      .requestsTo('/actions/workflows/42/dispatches')
      .filter((request) => (request.body as { inputs: { job_id: string } }).inputs.job_id === job.id);
    expect(attempts).toHaveLength(2);
    expect(attempts.every((request) => request.authorization === `Bearer ${TOKEN}`)).toBe(true);
    github.setRun(run.id, { status: 'completed', conclusion: 'failure' });
    await waitForJob(job.id, (current) => current.status === 'failure', 'the job failed');
    await api.releaseWith(
      (candidate) => candidate.id === job.releaseId && candidate.phase === 'failed',
      'the release to fail',
    );
  }, 90_000);

  it("ends the job invalid_integration with GitHub's message when GitHub refuses the dispatch", async () => {
    github.failNext('dispatch', 422);
    const { job } = await deployWith('gh-refused', { token: TOKEN });
    const ended = await waitForJob(
      job.id,
      (current) => current.status === 'invalid_integration',
      'the refusal',
    );
    expect(ended.message).toMatch(/answered 422: fake 422 for dispatch/);
    expect(ended.message).not.toContain(TOKEN);
  });

  it('ends the job invalid_job_agent when the configuration lacks what a dispatch needs', async () => {
    const { job } = await deployWith('gh-incomplete', { repo: undefined, token: TOKEN });
    const ended = await waitForJob(
      job.id,
      (current) => current.status === 'invalid_job_agent',
      'the job to end',
    );
    expect(ended.message).toContain('lacks repo');
  });

  it('takes a signed workflow_run webhook, and refuses a bad signature with 401', async () => {
    const secret = 'webhook-secret-for-tests';
    const { job, agentId } = await deployWith('gh-hook', { token: TOKEN, webhook_secret: secret });
    const run = await runOf(job.id);
    const path = `/v1/workspaces/${stack.workspaceId}/job-agents/${agentId}/github/webhook`;
    const payload = JSON.stringify({
      action: 'completed',
      workflow_run: { ...run, status: 'completed', conclusion: 'success' },
    });
    const sign = (key: string) => `sha256=${createHmac('sha256', key).update(payload).digest('hex')}`;
    const post = (signature: string) =>
      stack.http
        .post(path)
        .set({
          'content-type': 'application/json',
          'x-github-event': 'workflow_run',
          'x-hub-signature-256': signature,
        })
        .send(payload);

    await waitForJob(job.id, (current) => current.status === 'triggered', 'the job triggered');
    const forged = await post(sign('not-the-secret'));
    expect(forged.status).toBe(401);
    expect(forged.headers['content-type']).toContain('application/problem+json');
    expect((await jobOf(job.id)).status).toBe('triggered');

    const delivered = await post(sign(secret));
    expect(delivered.status).toBe(202);
    expect(delivered.body).toEqual({ handled: true, jobId: job.id, status: 'successful' });
    // The fake's run still says queued: the webhook, not a poll, moved the job.
    expect(run.status).toBe('queued');
    const done = await jobOf(job.id);
    expect(done).toMatchObject({ status: 'successful', externalId: String(run.id) });
    await api.releaseWith(
      (candidate) => candidate.id === job.releaseId && candidate.phase === 'succeeded',
      'the release to succeed',
    );
  });

  it('cancels the GitHub run when the release is cancelled', async () => {
    const { job } = await deployWith('gh-cancel', { token: TOKEN });
    const run = await runOf(job.id);
    github.setRun(run.id, { status: 'in_progress', conclusion: null });
    await waitForJob(job.id, (current) => current.status === 'in_progress', 'the job in progress');
    await api.send('post', `/releases/${job.releaseId}/cancel`, {}, [202]);
    await eventually(() => github.requestsTo(`/actions/runs/${run.id}/cancel`).length === 1, {
      what: 'the run to be cancelled',
    });
    expect(run).toMatchObject({ status: 'completed', conclusion: 'cancelled' });
    expect((await jobOf(job.id)).status).toBe('cancelled');
  }, 90_000);
});
