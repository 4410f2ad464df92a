import { randomUUID } from 'node:crypto';
import { serverFreeApp, type ServerFreeApp } from './serverFreeApp';

/**
 * docs/behaviour.md "Authentication", through the real app with fake stores: who may call what,
 * and the problem+json every refusal answers.
 */
describe('authentication and authorization of routes (no servers)', () => {
  let api: ServerFreeApp;
  const systems = (workspaceId = api.workspaceId) => `/v1/workspaces/${workspaceId}/systems`;
  const poll = (workspaceId = api.workspaceId) =>
    `/v1/workspaces/${workspaceId}/job-agents/${api.agentId}/jobs`;

  beforeEach(() => {
    api = serverFreeApp();
  });

  it('answers liveness without a key', async () => {
    const res = await api.http.get('/healthz').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it.each([
    ['no key', {}],
    ['an unknown key', { 'x-api-key': 'fdk_unknown' }],
    ['a bearer of an unknown key', { Authorization: 'Bearer fdk_unknown' }],
    ['a scheme other than Bearer', { Authorization: 'Basic Zm9vOmJhcg==' }],
  ])('answers 401 problem+json to %s, with the scheme to use', async (_, headers) => {
    const res = await api.http.get(systems()).set(headers).expect(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="flightdeck"/);
    expect(res.body).toMatchObject({
      type: 'urn:flightdeck:problem:unauthenticated',
      title: 'Unauthorized',
      status: 401,
      code: 'unauthenticated',
      instance: systems(),
    });
    expect(res.body.detail).toBe(res.body.message);
    expect(typeof res.body.requestId).toBe('string');
  });

  it('refuses before validating: a key-less request with a bad body is 401, not 400', async () => {
    await api.http.post(systems()).send({ unknown: true }).expect(401);
  });

  it('takes the key as x-api-key and as Authorization: Bearer, under /v1 and /api/v1', async () => {
    const key = api.operator['x-api-key'];
    await api.http.get(systems()).set(api.operator).expect(200);
    await api.http.get(`/api${systems()}`).set('Authorization', `Bearer ${key}`).expect(200);
  });

  it("answers 404 for another workspace's records, as if the workspace did not exist", async () => {
    const res = await api.http.get(systems(api.otherWorkspaceId)).set(api.operator).expect(404);
    expect(res.body).toMatchObject({ status: 404, code: 'not_found' });
    expect(res.body.detail).toContain(api.otherWorkspaceId);
    await api.http.get(poll(api.otherWorkspaceId)).set(api.agent).expect(404);
    expect(api.world.pullCalls).toEqual([]);
  });

  it("answers 404 for a record of another workspace's key, by id", async () => {
    const created = await api.http.post(systems()).set(api.operator).send({ name: 'Payments' }).expect(202);
    await api.http.get(`${systems()}/${created.body.id}`).set(api.stranger).expect(404);
    await api.http
      .get(`${systems(api.otherWorkspaceId)}/${created.body.id}`)
      .set(api.stranger)
      .expect(404);
  });

  it('lets a key scoped to one agent call pull endpoints only (403 agent_scope elsewhere)', async () => {
    const refused = await api.http.get(systems()).set(api.agent).expect(403);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 403, code: 'agent_scope', title: 'Forbidden' });
    await api.http.post(`/v1/workspaces/${api.workspaceId}/holds`).set(api.agent).send({}).expect(403);
    await api.http.get(poll()).set(api.agent).expect(200);
  });

  it('answers an unknown path with a 404 problem, and a known path with the wrong method with 405', async () => {
    const unknown = await api.http.get('/v1/nothing-here').set(api.operator).expect(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(unknown.body).toMatchObject({ status: 404, code: 'not_found' });
    const wrongMethod = await api.http.patch(`${systems()}/${randomUUID()}`).set(api.operator).expect(405);
    expect(wrongMethod.body).toMatchObject({ status: 405, code: 'method_not_allowed' });
  });
});
