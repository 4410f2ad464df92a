import { randomUUID } from 'node:crypto';
import { serverFreeApp, type ServerFreeApp } from './serverFreeApp';

/**
 * The pull endpoints (api/routes/pull.ts) through the real app with fake stores: the caller each
 * one hands its store (a key scoped to the agent, or the workspace's key), the answers' shapes,
 * validation, and what sets them apart from other routes (TLS, no audit event of their own).
 */
describe('pull routes (no servers)', () => {
  let api: ServerFreeApp;
  const agentJobs = () => `/v1/workspaces/${api.workspaceId}/job-agents/${api.agentId}/jobs`;
  const job = (jobId: string) => `/v1/workspaces/${api.workspaceId}/jobs/${jobId}`;

  beforeEach(() => {
    api = serverFreeApp();
  });

  it("polls the agent's queued jobs as list items: no configuration, the agent's key as the caller", async () => {
    const queued = api.world.queueJob(api.workspaceId, api.agentId);
    const res = await api.http.get(agentJobs()).set(api.agent).expect(200);
    expect(res.body).toEqual({
      items: [
        expect.objectContaining({
          id: queued.id,
          status: 'queued',
          jobAgentId: api.agentId,
          jobAgentConfig: {},
          metadata: {},
        }),
      ],
      total: 1,
      limit: 100,
      offset: 0,
    });
    expect(api.world.pullCalls).toEqual([
      {
        method: 'poll',
        caller: { workspaceId: api.workspaceId, jobAgentId: api.agentId },
        jobAgentId: api.agentId,
      },
    ]);
  });

  it("hands the store no agent for the workspace's own key", async () => {
    await api.http.get(`${agentJobs()}?status=in_progress`).set(api.operator).expect(200);
    expect(api.world.pullCalls).toEqual([
      { method: 'poll', caller: { workspaceId: api.workspaceId, jobAgentId: null }, jobAgentId: api.agentId },
    ]);
  });

  it('answers 400 for an unknown status and for a job id that is not a UUID, before calling the store', async () => {
    const status = await api.http.get(`${agentJobs()}?status=sleeping`).set(api.agent).expect(400);
    expect(status.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(status.body.errors).toEqual([
      { path: 'query.status', message: expect.stringContaining('sleeping') },
    ]);
    const id = await api.http.post(`${agentJobs()}/not-a-job/claim`).set(api.agent).expect(400);
    expect(id.body.errors).toEqual([{ path: 'path.jobId', message: expect.any(String) }]);
    expect(api.world.pullCalls).toEqual([]);
  });

  it('claims a queued job (200, the job with its configuration and lease), once: 409 the second time', async () => {
    const queued = api.world.queueJob(api.workspaceId, api.agentId);
    const claimed = await api.http.post(`${agentJobs()}/${queued.id}/claim`).set(api.agent).expect(200);
    expect(claimed.body).toMatchObject({
      id: queued.id,
      status: 'in_progress',
      jobAgentConfig: { image: 'web:1' },
      lease_seconds: 60,
      claim_id: expect.any(String),
      claim_expires_at: expect.any(String),
    });
    const again = await api.http.post(`${agentJobs()}/${queued.id}/claim`).set(api.agent).expect(409);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(again.body).toMatchObject({ status: 409, code: 'not_claimable' });
    // A claim's audit event is the engine's (audit: false): the route writes none.
    expect(api.world.audit).toEqual([]);
  });

  it('answers 404 problem+json for a job it does not know', async () => {
    const res = await api.http.post(`${agentJobs()}/${randomUUID()}/claim`).set(api.agent).expect(404);
    expect(res.body).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('extends the lease of the current claim (200), refuses another claim id (409) and a malformed one (400)', async () => {
    const queued = api.world.queueJob(api.workspaceId, api.agentId);
    const claimed = await api.http.post(`${agentJobs()}/${queued.id}/claim`).set(api.agent).expect(200);
    const heartbeat = `${job(queued.id)}/heartbeat`;
    const lease = await api.http
      .post(heartbeat)
      .set(api.agent)
      .send({ claim_id: claimed.body.claim_id })
      .expect(200);
    expect(lease.body).toEqual({
      job_id: queued.id,
      claim_id: claimed.body.claim_id,
      claim_expires_at: expect.any(String),
      lease_seconds: 60,
    });
    const stale = await api.http.post(heartbeat).set(api.agent).send({ claim_id: randomUUID() }).expect(409);
    expect(stale.body).toMatchObject({ status: 409, code: 'stale_claim' });
    const malformed = await api.http.post(heartbeat).set(api.agent).send({ claim_id: 'x' }).expect(400);
    expect(malformed.body.errors).toEqual([{ path: 'body.claim_id', message: expect.any(String) }]);
    // No body at all is a heartbeat without a claim id.
    await api.http.post(heartbeat).set(api.agent).expect(200);
  });

  it("records a status report (202) with the agent's key as the reporter, legacy spellings included", async () => {
    const queued = api.world.queueJob(api.workspaceId, api.agentId);
    const reported = await api.http
      .put(`${job(queued.id)}/status`)
      .set(api.agent)
      .send({ status: 'in_progress', message: 'started' })
      .expect(202);
    expect(reported.body).toMatchObject({
      id: queued.id,
      message: 'Job status recorded',
      job: { status: 'in_progress' },
    });
    const legacy = await api.http
      .patch(`/api/v1/jobs/${queued.id}`)
      .set(api.agent)
      .send({ status: 'completed' })
      .expect(200);
    expect(legacy.body).toMatchObject({ id: queued.id, status: 'successful' });
    const caller = { workspaceId: api.workspaceId, jobAgentId: api.agentId };
    expect(api.world.pullCalls).toEqual([
      { method: 'reportStatus', caller, jobId: queued.id },
      { method: 'reportStatus', caller, jobId: queued.id },
    ]);
  });

  it('answers 400 for a status no job has and for a legacy update that says nothing', async () => {
    const queued = api.world.queueJob(api.workspaceId, api.agentId);
    const unknown = await api.http
      .put(`${job(queued.id)}/status`)
      .set(api.agent)
      .send({ status: 'done-ish' })
      .expect(400);
    expect(unknown.body.errors).toEqual([{ path: 'body.status', message: expect.any(String) }]);
    const empty = await api.http.patch(`/v1/jobs/${queued.id}`).set(api.agent).send({}).expect(400);
    expect(empty.body.errors).toEqual([{ path: 'body', message: 'give status, message or externalId' }]);
  });

  it('gives a claimed job back to the queue (202) and refuses to requeue a queued one (409)', async () => {
    const queued = api.world.queueJob(api.workspaceId, api.agentId);
    await api.http.post(`${agentJobs()}/${queued.id}/claim`).set(api.agent).expect(200);
    const requeued = await api.http
      .post(`${job(queued.id)}/requeue`)
      .set(api.agent)
      .expect(202);
    expect(requeued.body).toMatchObject({ id: queued.id, status: 'queued' });
    await api.http
      .post(`${job(queued.id)}/requeue`)
      .set(api.agent)
      .expect(409);
  });

  it("answers the legacy queue in its own shape, for the key's own workspace", async () => {
    const res = await api.http.get(`/api/v1/job-agents/${api.agentId}/queue/next`).set(api.agent).expect(200);
    expect(res.body).toEqual({ jobs: [] });
    expect(api.world.pullCalls).toEqual([
      {
        method: 'legacyQueue',
        caller: { workspaceId: api.workspaceId, jobAgentId: api.agentId },
        jobAgentId: api.agentId,
      },
    ]);
  });

  it('needs TLS: a request forwarded as plain HTTP is refused (403 tls_required), other routes are not', async () => {
    const refused = await api.http
      .get(agentJobs())
      .set(api.operator)
      .set('X-Forwarded-Proto', 'http')
      .expect(403);
    expect(refused.body).toMatchObject({ status: 403, code: 'tls_required' });
    await api.http
      .get(`/v1/workspaces/${api.workspaceId}/systems`)
      .set(api.operator)
      .set('X-Forwarded-Proto', 'http')
      .expect(200);
    expect(api.world.pullCalls).toEqual([]);
  });
});
