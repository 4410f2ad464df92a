import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ApiServer } from '../../../api/server';
import { ApiClient } from '../../../cli/apiClient';
import { agentKey, pullFixture, serveStack, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** A non-loopback address of this machine: requests to it come from it, so they are not loopback. */
function externalAddress(): string | undefined {
  return Object.values(os.networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal)?.address;
}

/**
 * docs/behaviour.md "Authentication" (docs/design.md "Decisions": workspaces and keys, TLS): an agent-scoped key acts only for its
 * agent and only on pull endpoints (the rollout board refuses it too); pull endpoints refuse plain HTTP except from loopback or a
 * trusted TLS-terminating proxy; the server speaks HTTPS when given a certificate.
 */
describe('pull agents, authentication and transport', () => {
  const external = externalAddress();
  let stack: TestStack;
  let ws: string;
  let mine: PullFixture;
  let theirs: PullFixture;
  let key: string;

  beforeAll(async () => {
    stack = await startTestStack({
      transport: { trustedProxies: external ? [external] : [], allowInsecurePull: false },
    });
    ws = `/v1/workspaces/${stack.workspaceId}`;
    mine = await pullFixture(stack, 'mine', { resources: 2 });
    theirs = await pullFixture(stack, 'theirs', { resources: 1 });
    key = await agentKey(stack, mine.agentId);
  });
  afterAll(() => stack.close());

  const as = (apiKey: string) => ({ 'x-api-key': apiKey });

  it('lets an agent key poll, claim, heartbeat and report for its own agent only', async () => {
    const poll = await stack.http.get(`${ws}/job-agents/${mine.agentId}/jobs`).set(as(key));
    expect(poll.status).toBe(200);
    expect(poll.body.total).toBe(2);
    const job = mine.jobs[0]!;
    expect(
      (await stack.http.post(`${ws}/job-agents/${mine.agentId}/jobs/${job.id}/claim`).set(as(key))).status,
    ).toBe(200);
    expect(
      (await stack.http.put(`${ws}/jobs/${job.id}/status`).set(as(key)).send({ status: 'successful' }))
        .status,
    ).toBe(202);

    // Another agent of the same workspace does not exist for this key.
    const other = theirs.jobs[0]!;
    for (const res of [
      await stack.http.get(`${ws}/job-agents/${theirs.agentId}/jobs`).set(as(key)),
      await stack.http.post(`${ws}/job-agents/${theirs.agentId}/jobs/${other.id}/claim`).set(as(key)),
      await stack.http.put(`${ws}/jobs/${other.id}/status`).set(as(key)).send({ status: 'failure' }),
      await stack.http.post(`${ws}/jobs/${other.id}/heartbeat`).set(as(key)).send({}),
      await stack.http.patch(`/api/v1/jobs/${other.id}`).set(as(key)).send({ status: 'failure' }),
      await stack.http.get(`/api/v1/job-agents/${theirs.agentId}/queue/next`).set(as(key)),
    ]) {
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    // Its own job seen through another agent's path is not found either.
    expect(
      (
        await stack.http
          .post(`${ws}/job-agents/${theirs.agentId}/jobs/${mine.jobs[1]!.id}/claim`)
          .set(as(key))
      ).status,
    ).toBe(404);
    const untouched = await stack.http.get(`${ws}/jobs/${other.id}`).set(stack.auth);
    expect(untouched.body.status).toBe('queued');
  });

  it('keeps an agent key off every endpoint that is not a pull endpoint', async () => {
    for (const res of [
      await stack.http.get(`${ws}/deployments`).set(as(key)),
      await stack.http.get(`${ws}/jobs/${mine.jobs[0]!.id}`).set(as(key)),
      await stack.http.post(`${ws}/systems`).set(as(key)).send({ name: 'nope' }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('agent_scope');
    }
  });

  it('keeps an agent key off the rollout board: its sign-in is refused (403), and a key in a cookie is no session', async () => {
    const signIn = await stack.http.post('/ui/session').send({ apiKey: key });
    expect(signIn.status).toBe(403);
    expect(signIn.body.code).toBe('agent_scope');
    expect(signIn.headers['set-cookie']).toBeUndefined();

    // The board's cookie holds a session's id (a session bound to an agent's key is refused too:
    // test/integration/ui/boardSession.test.ts).
    const job = mine.jobs[1]!;
    const boardPaths = ['/ui/board.json', `/ui/jobs/${job.id}`, `/ui/job-agents/${mine.agentId}`];
    for (const path of boardPaths) {
      const res = await stack.http.get(path).set('Cookie', `flightdeck_session=${key}`);
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
      expect(res.text).not.toContain(theirs.agentId);
    }

    // The workspace's own key still signs in and reads the same paths through its session.
    const workspace = await stack.http.post('/ui/session').send({ apiKey: stack.apiKey });
    expect(workspace.status).toBe(204);
    const session = (workspace.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
    for (const path of boardPaths) {
      const res = await stack.http.get(path).set('Cookie', session);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
  });

  it('refuses plain HTTP from a non-loopback peer unless a trusted proxy says the client used HTTPS', async () => {
    if (!external) throw new Error('this machine has no non-loopback IPv4 address to test with');
    const server: ApiServer = await serveStack(stack, '0.0.0.0');
    const port = new URL(server.url).port;
    const client = new ApiClient({ apiUrl: `http://${external}:${port}`, apiKey: key });
    try {
      const pollPath = `${ws}/job-agents/${mine.agentId}/jobs`;
      const refused = await client.request<{ code: string }>('GET', pollPath);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('tls_required');
      // Non-pull endpoints are not pull endpoints: plain HTTP is the operator's choice there.
      const health = await client.request('GET', '/healthz');
      expect(health.status).toBe(200);

      const proxied = await fetch(`http://${external}:${port}${pollPath}`, {
        headers: { 'x-api-key': key, 'x-forwarded-proto': 'https' },
      });
      expect(proxied.status).toBe(200);
      const local = await new ApiClient({ apiUrl: server.url, apiKey: key }).request('GET', pollPath);
      expect(local.status).toBe(200);
    } finally {
      client.close();
      await server.close();
    }
  });

  it('serves HTTPS with the given certificate and key', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-tls-'));
    const certFile = path.join(dir, 'cert.pem');
    const keyFile = path.join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    const server = await serveStack(stack, '127.0.0.1', {
      cert: fs.readFileSync(certFile),
      key: fs.readFileSync(keyFile),
    });
    const client = new ApiClient({ apiUrl: server.url, apiKey: key, caFile: certFile });
    try {
      expect(server.url).toMatch(/^https:\/\//);
      const poll = await client.request<{ total: number }>('GET', `${ws}/job-agents/${mine.agentId}/jobs`);
      expect(poll.status).toBe(200);
      expect(poll.body.total).toBe(1);
      // Without trusting the certificate, the client refuses the server.
      const untrusted = new ApiClient({ apiUrl: server.url, apiKey: key });
      await expect(untrusted.request('GET', '/healthz')).rejects.toThrow(/self.signed|certificate/i);
      untrusted.close();
    } finally {
      client.close();
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
