import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiServer } from '../../../api/server';
import { ApiClient } from '../../../cli/apiClient';
import { JobSchema } from '../../../db/entities';
import { plainRecord } from '../../../db/plainRecords';
import { ApiKeyStore } from '../../../application/apiKeys';
import { WorkspaceStore } from '../../../application/workspaces';
import { recordsApi } from '../../helpers/orchestration';
import { pullFixture, serveStack, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** docs/behaviour.md "Pull job agents" (without a lease): poll, claim, status report, and the manual requeue. */
describe('pull agents without a lease', () => {
  let stack: TestStack;
  let ws: string;
  let fixture: PullFixture;

  beforeAll(async () => {
    stack = await startTestStack();
    ws = `/v1/workspaces/${stack.workspaceId}`;
    fixture = await pullFixture(stack, 'v1', { resources: 3, variables: { REGION: 'eu-west-1' } });
  });
  afterAll(() => stack.close());

  const poll = (agentId: string, query = '?status=queued') =>
    stack.http.get(`${ws}/job-agents/${agentId}/jobs${query}`).set(stack.auth);
  const claim = (agentId: string, jobId: string) =>
    stack.http.post(`${ws}/job-agents/${agentId}/jobs/${jobId}/claim`).set(stack.auth);

  it('polls job list items, oldest first, with no dispatch context or variables and no side effects', async () => {
    const first = await poll(fixture.agentId);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ total: 3, limit: 100, offset: 0 });
    expect(first.body.items).toHaveLength(3);
    const item = first.body.items[0];
    expect(Object.keys(item).sort()).toEqual(
      [
        'createdAt',
        'deployment',
        'environment',
        'id',
        'jobAgentConfig',
        'jobAgentId',
        'metadata',
        'releaseId',
        'resource',
        'status',
        'updatedAt',
        'workflowRunId',
      ].sort(),
    );
    expect(item).toMatchObject({
      status: 'queued',
      jobAgentId: fixture.agentId,
      jobAgentConfig: {},
      metadata: {},
      deployment: { id: fixture.deploymentId, slug: 'svc-v1' },
      environment: { name: 'env-v1' },
    });
    expect(JSON.stringify(first.body)).not.toContain('eu-west-1');
    const created = first.body.items.map((job: { createdAt: string }) => job.createdAt);
    expect([...created].sort()).toEqual(created);

    const page = await poll(fixture.agentId, '?limit=2&offset=1');
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect(page.body.items.map((job: { id: string }) => job.id)).toEqual(
      first.body.items.slice(1).map((job: { id: string }) => job.id),
    );
    // Polling changed nothing.
    expect((await poll(fixture.agentId)).body.items).toEqual(first.body.items);
    expect((await poll(fixture.agentId, '?status=in_progress')).body.total).toBe(0);
  });

  it('answers an unknown agent, or another workspace’s agent, with 404', async () => {
    expect((await poll('5d7e0a3c-1f2b-4c3d-9e8f-0a1b2c3d4e5f')).status).toBe(404);
    const em = stack.orm.em.fork() as EntityManager;
    const other = await new WorkspaceStore(em).create({ name: 'Other' });
    const otherKey = (await new ApiKeyStore(em).create({ workspaceId: other.id, name: 'other' })).key;
    const res = await stack.http
      .get(`/v1/workspaces/${other.id}/job-agents/${fixture.agentId}/jobs`)
      .set({ 'x-api-key': otherKey });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toContain('application/problem+json');
  });

  it('claims a queued job once: the full job with config and context; again 409; elsewhere 404', async () => {
    const [job] = (await poll(fixture.agentId)).body.items;
    const claimed = await claim(fixture.agentId, job.id);
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({ id: job.id, status: 'in_progress' });
    expect(claimed.body.startedAt).toEqual(expect.any(String));
    expect(claimed.body.jobAgentConfig).toMatchObject({ image: 'v1:1.0.0' });
    expect(claimed.body.dispatchContext).toMatchObject({
      variables: { REGION: 'eu-west-1' },
      version: { tag: '1.0.0' },
    });
    // Only a lease adds a claim id and a lease length to the answer (docs/behaviour.md "Claim").
    expect(claimed.body).not.toHaveProperty('claim_id');
    expect(claimed.body).not.toHaveProperty('lease_seconds');

    const again = await claim(fixture.agentId, job.id);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ status: 409, code: 'not_claimable' });

    const api = recordsApi(stack);
    const otherAgent = await api.agent('v1-other', 'http-pull');
    const [queued] = (await poll(fixture.agentId)).body.items;
    expect((await claim(otherAgent, queued.id)).status).toBe(404);
    expect((await claim(fixture.agentId, '5d7e0a3c-1f2b-4c3d-9e8f-0a1b2c3d4e5f')).status).toBe(404);
    // The failed claims left the job queued.
    expect((await poll(fixture.agentId)).body.items.map((item: { id: string }) => item.id)).toContain(
      queued.id,
    );
  });

  it('records a status report and advances the release', async () => {
    const api = recordsApi(stack);
    const [job] = (await poll(fixture.agentId)).body.items;
    expect((await claim(fixture.agentId, job.id)).status).toBe(200);
    const report = await stack.http
      .put(`${ws}/jobs/${job.id}/status`)
      .set(stack.auth)
      .send({ status: 'successful', message: 'deployed' });
    expect(report.status).toBe(202);
    expect(report.body).toMatchObject({
      id: job.id,
      message: 'Job status recorded',
      job: { status: 'successful', message: 'deployed' },
    });
    expect(report.body.job.completedAt).toEqual(expect.any(String));
    // The answers are built from the statements' rows as plain records: the job as the ORM maps it.
    const em = stack.orm.em.fork() as EntityManager;
    const [row] = await em.execute<Record<string, unknown>[]>('SELECT * FROM job WHERE id = ?', [job.id]);
    const record = plainRecord(em, JobSchema, row!);
    expect(record).toEqual({ ...em.map(JobSchema, row!) });
    expect(record).toMatchObject({ id: job.id, status: 'successful', completedAt: expect.any(Date) });
    await api.releaseWith(
      (release) => release.id === job.releaseId && release.phase === 'succeeded',
      'the release to succeed',
    );
  });

  it('requeues an in_progress job (V1 recovery) and nothing else', async () => {
    const [job] = (await poll(fixture.agentId)).body.items;
    expect((await claim(fixture.agentId, job.id)).status).toBe(200);
    const requeued = await stack.http.post(`${ws}/jobs/${job.id}/requeue`).set(stack.auth).send({});
    expect(requeued.status).toBe(202);
    expect(requeued.body).toMatchObject({ id: job.id, status: 'queued' });
    expect(requeued.body).not.toHaveProperty('startedAt');
    expect((await poll(fixture.agentId)).body.items.map((item: { id: string }) => item.id)).toContain(job.id);
    const twice = await stack.http.post(`${ws}/jobs/${job.id}/requeue`).set(stack.auth).send({});
    expect(twice.status).toBe(409);
    // And the job can be claimed again.
    expect((await claim(fixture.agentId, job.id)).status).toBe(200);
  });

  describe('32 concurrent claimers over 500 queued jobs', () => {
    let server: ApiServer;
    let agentId: string;
    let jobIds: string[];

    beforeAll(async () => {
      server = await serveStack(stack);
      const race = await pullFixture(stack, 'race', { resources: 1 });
      agentId = race.agentId;
      // 500 queued jobs of the agent: copies of the real one (distinct agent entries keep the
      // one-active-job-per-entry index satisfied). Only the claim statement is under test here.
      const em = stack.orm.em.fork() as EntityManager;
      const rows = await em.execute<{ id: string }[]>(
        `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id,
                          agent_type, agent_entry, status, job_agent_config, dispatch_context, created_at)
         SELECT gen_random_uuid(), workspace_id, release_id, deployment_id, environment_id, resource_id,
                job_agent_id, agent_type, 1000 + n, 'queued', job_agent_config, dispatch_context,
                created_at + n * interval '1 millisecond'
           FROM job, generate_series(1, 499) AS n
          WHERE id = ?
         RETURNING id`,
        [race.jobs[0]!.id],
      );
      jobIds = [race.jobs[0]!.id, ...rows.map((row) => row.id)];
      expect(jobIds).toHaveLength(500);
    });
    afterAll(() => server.close());

    it('hands every job out exactly once; every other attempt is 409', async () => {
      const client = new ApiClient({ apiUrl: server.url, apiKey: stack.apiKey });
      const call = client.request.bind(client);
      const wins: string[] = [];
      const others: number[] = [];
      let attempts = 0;
      const claimer = async (index: number) => {
        for (;;) {
          const page = await call<{ items: { id: string }[] }>(
            'GET',
            `${ws}/job-agents/${agentId}/jobs?status=queued&limit=16`,
          );
          expect(page.status).toBe(200);
          if (page.body.items.length === 0) return;
          // Like a real agent: try the page's jobs until one claim wins, then poll again. Claimers
          // start at different places in the page, so some race for a job and some make progress.
          const items = page.body.items;
          for (let n = 0; n < items.length; n++) {
            const item = items[(n + index) % items.length]!;
            attempts++;
            const res = await call('POST', `${ws}/job-agents/${agentId}/jobs/${item.id}/claim`);
            if (res.status === 200) {
              wins.push(item.id);
              break;
            }
            others.push(res.status);
          }
        }
      };
      await Promise.all(Array.from({ length: 32 }, (_, index) => claimer(index)));

      expect(wins).toHaveLength(500);
      expect(new Set(wins)).toEqual(new Set(jobIds));
      expect(others.length).toBe(attempts - 500);
      expect(others.length).toBeGreaterThan(0);
      expect(new Set(others)).toEqual(new Set([409]));
      const em = stack.orm.em.fork() as EntityManager;
      const [counts] = await em.execute<{ in_progress: number; started: number }[]>(
        `SELECT count(*) FILTER (WHERE status = 'in_progress')::int AS in_progress,
                count(started_at)::int AS started
           FROM job WHERE job_agent_id = ?`,
        [agentId],
      );
      expect(counts).toEqual({ in_progress: 500, started: 500 });
      expect((await call<{ total: number }>('GET', `${ws}/job-agents/${agentId}/jobs`)).body.total).toBe(0);
      client.close();
    });
  });
});
