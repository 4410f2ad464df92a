import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  ASSIGNMENT_TABLES,
  REDACTED,
  refusedWithoutWrites as refusedIn,
  sqlOf,
  TIMESTAMP_PATTERN as ISO_TIMESTAMP,
} from '../../helpers/recordFixtures';
import {
  createOtherWorkspace,
  expectFieldError,
  withoutMessage,
  type WorkspaceAccess,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Job agents over HTTP: each type created and replaced by PUT with its secrets sealed, kept and rotated,
 * validation, the list, deletion. 401, another workspace's agent (404) and duplicate names (409):
 * contract.test.ts.
 */
describe('job agents over HTTP', () => {
  let stack: TestStack;
  let other: WorkspaceAccess;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const otherWs = () => `/v1/workspaces/${other.id}`;
  const sql = sqlOf(() => stack);
  const query = <T extends object>(text: string, params: unknown[] = []) => sql<T[]>(text, params);
  const refusedWithoutWrites = (send: () => PromiseLike<Response>) =>
    refusedIn(stack, ASSIGNMENT_TABLES, send);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    other = await createOtherWorkspace(stack);
  });
  afterAll(() => stack.close());

  const agentPath = (id: string, base = ws()) => `${base}/job-agents/${id}`;

  async function storedConfig(id: string): Promise<Record<string, unknown>> {
    const [row] = await query<{ config: Record<string, unknown> }>(
      'SELECT config FROM job_agent WHERE id = ?',
      [id],
    );
    return row!.config;
  }

  const agentCases = [
    {
      type: 'http-pull',
      config: { leaseSeconds: 30, enforceClaimId: true },
      shown: { leaseSeconds: 30, enforceClaimId: true },
    },
    {
      type: 'github-app',
      config: {
        owner: 'acme',
        repo: 'deploys',
        workflow_id: 1234,
        installation_id: 42,
        app_id: 7,
        private_key: '-----BEGIN PRIVATE KEY-----abc',
      },
      shown: {
        owner: 'acme',
        repo: 'deploys',
        workflow_id: 1234,
        ref: 'main',
        installation_id: 42,
        app_id: 7,
        private_key: REDACTED,
      },
      secret: { key: 'private_key', plaintext: '-----BEGIN PRIVATE KEY-----abc' },
    },
    {
      type: 'argo-cd',
      config: {
        template: 'kind: Application',
        server_url: 'https://argo.example.com',
        api_key: 'argo-secret',
      },
      shown: { template: 'kind: Application', server_url: 'https://argo.example.com', api_key: REDACTED },
      secret: { key: 'api_key', plaintext: 'argo-secret' },
    },
    {
      type: 'tfe',
      config: {
        organization: 'acme',
        template: 'workspace-template',
        address: 'https://app.terraform.io',
        token: 'tfe-token',
      },
      shown: {
        organization: 'acme',
        template: 'workspace-template',
        address: 'https://app.terraform.io',
        token: REDACTED,
      },
      secret: { key: 'token', plaintext: 'tfe-token' },
    },
    {
      type: 'test-runner',
      config: {},
      shown: { status: 'successful', delaySeconds: 0 },
    },
  ];
  const agentIds: Record<string, string> = {};

  it.each(agentCases)(
    'creates a $type agent, replaces it (202 both), and never returns its secrets',
    async ({ type, config, shown, secret }) => {
      const id = randomUUID();
      agentIds[type] = id;
      const name = `${type} agent`;
      const created = await stack.http
        .put(agentPath(id))
        .set(stack.auth)
        .send({ name, type, config })
        .expect(202);
      expect(created.body).toEqual({
        id,
        workspaceId: stack.workspaceId,
        name,
        type,
        config: shown,
        metadata: {},
        createdAt: expect.stringMatching(ISO_TIMESTAMP),
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Job agent created',
      });

      if (secret) {
        const stored = await storedConfig(id);
        expect(stored[secret.key]).toEqual(expect.stringMatching(/^fd2:/));
        expect(
          stack.secrets.forRecord(stack.workspaceId, 'job_agent', id).open(stored[secret.key] as string),
        ).toBe(secret.plaintext);
        expect(JSON.stringify(created.body)).not.toContain(secret.plaintext);
      }

      const replaced = await stack.http
        .put(agentPath(id))
        .set(stack.auth)
        .send({ name, type, config, metadata: { team: 'platform' } })
        .expect(202);
      expect(replaced.body).toEqual({
        ...created.body,
        metadata: { team: 'platform' },
        updatedAt: expect.stringMatching(ISO_TIMESTAMP),
        message: 'Job agent updated',
      });
      const read = await stack.http.get(agentPath(id)).set(stack.auth).expect(200);
      expect(read.body).toEqual(withoutMessage(replaced.body));
    },
  );

  /** Replaces the Argo CD agent's configuration. */
  const putArgo = (config: Record<string, unknown>) =>
    stack.http
      .put(agentPath(agentIds['argo-cd']!))
      .set(stack.auth)
      .send({ name: 'argo-cd agent', type: 'argo-cd', config });

  it('keeps the stored secret when {"sensitive": true} is sent back, and replaces it when a new one is sent', async () => {
    const id = agentIds['argo-cd']!;
    const sealedBefore = (await storedConfig(id)).api_key;
    const kept = await putArgo({ server_url: 'https://argo.example.com', api_key: REDACTED }).expect(202);
    expect(kept.body.config).toEqual({ server_url: 'https://argo.example.com', api_key: REDACTED });
    expect(await storedConfig(id)).toEqual({
      server_url: 'https://argo.example.com',
      api_key: sealedBefore,
    });

    await putArgo({ api_key: 'rotated-secret' }).expect(202);
    const rotated = await storedConfig(id);
    expect(rotated.api_key).not.toBe(sealedBefore);
    expect(stack.secrets.forRecord(stack.workspaceId, 'job_agent', id).open(rotated.api_key as string)).toBe(
      'rotated-secret',
    );
  });

  it('keeps an Argo CD server given as a bare host name as written, bound to https://<host>', async () => {
    const id = agentIds['argo-cd']!;
    await putArgo({ server_url: 'https://argo.example.com', api_key: 'k' }).expect(202);
    const sealedBefore = (await storedConfig(id)).api_key;
    const bare = await putArgo({ server_url: 'argo.example.com', api_key: REDACTED }).expect(202);
    expect(bare.body.config).toEqual({ server_url: 'argo.example.com', api_key: REDACTED });
    expect(await storedConfig(id)).toEqual({ server_url: 'argo.example.com', api_key: sealedBefore });

    const moved = await putArgo({ server_url: 'argo.other.example', api_key: REDACTED });
    expect(moved.status).toBe(409);
    expect(moved.body.code).toBe('credential_destination_changed');
    const refused = await putArgo({ server_url: 'ftp://argo.example.com' });
    expect(refused.status).toBe(400);
    expect(await storedConfig(id)).toEqual({ server_url: 'argo.example.com', api_key: sealedBefore });
  });

  it('refuses {"sensitive": true} when no secret is stored, and writes nothing', async () => {
    const fresh = await refusedWithoutWrites(() =>
      stack.http
        .put(agentPath(randomUUID()))
        .set(stack.auth)
        .send({ name: 'fresh tfe', type: 'tfe', config: { token: REDACTED } }),
    );
    expectFieldError(fresh, 'body.config.token');

    const existingWithoutToken = await refusedWithoutWrites(() =>
      stack.http
        .put(agentPath(agentIds['github-app']!))
        .set(stack.auth)
        .send({
          name: 'github-app agent',
          type: 'github-app',
          config: { private_key: REDACTED, token: REDACTED },
        }),
    );
    expectFieldError(existingWithoutToken, 'body.config.token');
  });

  it.each([
    [
      'a negative github-app workflow_id',
      { type: 'github-app', config: { workflow_id: -1 } },
      'body.config.workflow_id',
    ],
    [
      'an unknown config key',
      { type: 'argo-cd', config: { server_url: 'https://a.example.com', namespace: 'x' } },
      'body.config.namespace',
    ],
    ['an unknown type', { type: 'jenkins', config: {} }, 'body.type'],
    [
      'a lease shorter than 5 seconds',
      { type: 'http-pull', config: { leaseSeconds: 1 } },
      'body.config.leaseSeconds',
    ],
    [
      'a server_url that names no http(s) server',
      { type: 'argo-cd', config: { server_url: 'ftp://argo' } },
      'body.config.server_url',
    ],
    ['an empty secret', { type: 'tfe', config: { token: '' } }, 'body.config.token'],
    [
      'a test-runner status that does not exist',
      { type: 'test-runner', config: { status: 'done' } },
      'body.config.status',
    ],
  ])('answers 400 for %s with its field path, and writes nothing', async (_, body, path) => {
    const id = randomUUID();
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(agentPath(id))
        .set(stack.auth)
        .send({ name: 'invalid agent', ...body }),
    );
    expectFieldError(res, path);
    await stack.http.get(agentPath(id)).set(stack.auth).expect(404);
  });

  it('names the unknown config key in the path', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(agentPath(randomUUID()))
        .set(stack.auth)
        .send({ name: 'typo agent', type: 'tfe', config: { organisation: 'acme' } }),
    );
    expectFieldError(res, 'body.config.organisation', 'unknown field');
  });

  it('lists the agents oldest first with their secrets redacted', async () => {
    const res = await stack.http.get(`${ws()}/job-agents`).set(stack.auth).expect(200);
    expect(res.body).toMatchObject({ total: agentCases.length, limit: 50, offset: 0 });
    expect(res.body.items.map((agent: { id: string }) => agent.id)).toEqual(
      agentCases.map(({ type }) => agentIds[type]),
    );
    const text = JSON.stringify(res.body);
    expect(text).not.toContain('fd1:');
    for (const plaintext of ['argo-secret', 'rotated-secret', 'tfe-token', 'BEGIN PRIVATE KEY']) {
      expect(text).not.toContain(plaintext);
    }
    const [stored] = await query<{ count: number }>(
      'SELECT count(*)::int AS count FROM job_agent WHERE workspace_id = ?',
      [stack.workspaceId],
    );
    expect(stored!.count).toBe(agentCases.length);
  });

  it('accepts the same name in another workspace', async () => {
    const res = await stack.http
      .put(agentPath(randomUUID(), otherWs()))
      .set(other.auth)
      .send({ name: 'http-pull agent', type: 'http-pull' })
      .expect(202);
    expect(res.body).toMatchObject({ workspaceId: other.id, name: 'http-pull agent', config: {} });
  });

  it('deletes an agent with 202', async () => {
    const id = agentIds['test-runner']!;
    const res = await stack.http.delete(agentPath(id)).set(stack.auth).expect(202);
    expect(res.body).toEqual({ id, message: 'Job agent deleted' });
    await stack.http.get(agentPath(id)).set(stack.auth).expect(404);
    const list = await stack.http.get(`${ws()}/job-agents`).set(stack.auth).expect(200);
    expect(list.body.total).toBe(agentCases.length - 1);
    expect(list.body.items.map((agent: { id: string }) => agent.id)).not.toContain(id);
    expect((await refusedWithoutWrites(() => stack.http.delete(agentPath(id)).set(stack.auth))).status).toBe(
      404,
    );
  });
});
