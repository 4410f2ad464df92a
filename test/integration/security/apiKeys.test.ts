import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeyStore, hashApiKey } from '../../../application/apiKeys';
import { exited, spawnFlightdeck } from '../../helpers/processes';
import { startTestStack, type TestStack } from '../../helpers/stack';

const ADMIN_TOKEN = 'operator-token-for-tests-0123456789';
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('API keys: list, revoke, last use', () => {
  let stack: TestStack;
  const keysPath = (workspaceId = stack.workspaceId) => `/v1/admin/workspaces/${workspaceId}/api-keys`;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN });
  });
  afterAll(() => stack.close());

  async function issue(name: string, workspaceId = stack.workspaceId): Promise<{ id: string; key: string }> {
    const res = await stack.http.post(keysPath(workspaceId)).set(admin).send({ name }).expect(201);
    return { id: res.body.id, key: res.body.key };
  }

  async function listed(id: string) {
    const res = await stack.http.get(keysPath()).set(admin).expect(200);
    return res.body.items.find((item: { id: string }) => item.id === id);
  }

  const workspaceOf = (key: string) =>
    stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set('x-api-key', key);

  it("lists the workspace's keys with their prefix, never the key or its hash", async () => {
    const issued = await issue('listed');
    const res = await stack.http.get(keysPath()).set(admin).expect(200);
    expect(res.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(res.body.items.map((item: { name: string }) => item.name)).toEqual(['test', 'listed']);
    expect(res.body.items[1]).toEqual({
      id: issued.id,
      workspaceId: stack.workspaceId,
      name: 'listed',
      prefix: issued.key.slice(0, 12),
      jobAgentId: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      lastUsedAt: null,
      revokedAt: null,
    });
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(issued.key);
    expect(text).not.toContain(stack.apiKey);
    expect(text).not.toContain(hashApiKey(issued.key));
    expect(text).not.toMatch(/keyHash|key_hash|"key"/);
  });

  it('pages the list and answers 404 for an unknown workspace', async () => {
    const page = await stack.http.get(`${keysPath()}?limit=1&offset=1`).set(admin).expect(200);
    expect(page.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(page.body.items).toHaveLength(1);
    await stack.http.get(keysPath('00000000-0000-7000-8000-000000000000')).set(admin).expect(404);
  });

  it('needs the operator token: an API key of the workspace is not enough', async () => {
    await stack.http.get(keysPath()).set(stack.auth).expect(401);
    const [someKey] = (await stack.http.get(keysPath()).set(admin)).body.items;
    await stack.http.delete(`${keysPath()}/${someKey.id}`).set(stack.auth).expect(401);
  });

  it('records the last use at most once a minute', async () => {
    const issued = await issue('used');
    expect((await listed(issued.id)).lastUsedAt).toBeNull();

    const before = Date.now();
    await workspaceOf(issued.key).expect(200);
    const first = (await listed(issued.id)).lastUsedAt as string;
    expect(Date.parse(first)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(first)).toBeLessThanOrEqual(Date.now() + 1000);

    await workspaceOf(issued.key).expect(200);
    expect((await listed(issued.id)).lastUsedAt).toBe(first);

    const em = stack.orm.em.fork() as EntityManager;
    await em
      .getConnection()
      .execute(`UPDATE api_key SET last_used_at = now() - interval '2 minutes' WHERE id = ?`, [issued.id]);
    const aged = (await listed(issued.id)).lastUsedAt as string;
    await workspaceOf(issued.key).expect(200);
    const again = (await listed(issued.id)).lastUsedAt as string;
    expect(Date.parse(again)).toBeGreaterThan(Date.parse(aged) + 60_000);
  });

  it('authenticates even when the last use cannot be written', async () => {
    const issued = await issue('read-only');
    const em = stack.orm.em.fork() as EntityManager;
    const connection = em.getConnection();
    const failingWrites = {
      isInTransaction: () => false,
      getConnection: () => ({
        getKnex: () => connection.getKnex(),
        execute: (sql: string, params: unknown[], method?: 'all' | 'get' | 'run') =>
          sql.trimStart().startsWith('UPDATE')
            ? Promise.reject(new Error('cannot execute UPDATE in a read-only transaction'))
            : connection.execute(sql, params, method),
      }),
    } as unknown as EntityManager;
    await expect(new ApiKeyStore(failingWrites).authenticate(issued.key)).resolves.toMatchObject({
      kind: 'apiKey',
      workspaceId: stack.workspaceId,
      apiKeyId: issued.id,
    });
    expect((await listed(issued.id)).lastUsedAt).toBeNull();
  });

  it('issues a key scoped to the job agent it names, which reaches nothing else', async () => {
    const agentId = randomUUID();
    await stack.http
      .put(`/v1/workspaces/${stack.workspaceId}/job-agents/${agentId}`)
      .set(stack.auth)
      .send({ name: 'scoped-agent', type: 'http-pull', config: {} })
      .expect(202);
    const res = await stack.http
      .post(keysPath())
      .set(admin)
      .send({ name: 'agent key', jobAgentId: agentId })
      .expect(201);
    expect((await listed(res.body.id)).jobAgentId).toBe(agentId);
    const outside = await workspaceOf(res.body.key);
    expect(outside.status).toBe(403);
    expect(outside.body.code).toBe('agent_scope');
  });

  it('revokes a key: 204, it answers 401 at once, and revoking again changes nothing', async () => {
    const issued = await issue('revoked');
    await workspaceOf(issued.key).expect(200);

    const res = await stack.http.delete(`${keysPath()}/${issued.id}`).set(admin).expect(204);
    expect(res.text).toBe('');
    const denied = await workspaceOf(issued.key).expect(401);
    expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
    await stack.http
      .get(`/v1/workspaces/${stack.workspaceId}`)
      .set('Authorization', `Bearer ${issued.key}`)
      .expect(401);

    const revokedAt = (await listed(issued.id)).revokedAt as string;
    expect(revokedAt).toEqual(expect.stringMatching(/^\d{4}-/));
    await stack.http.delete(`${keysPath()}/${issued.id}`).set(admin).expect(204);
    expect((await listed(issued.id)).revokedAt).toBe(revokedAt);
    await workspaceOf(issued.key).expect(401);
    // The stack's own key is untouched.
    await workspaceOf(stack.apiKey).expect(200);
  });

  it("answers 404 for another workspace's key and for an unknown id, and revokes nothing", async () => {
    const other = await stack.http
      .post('/v1/admin/workspaces')
      .set(admin)
      .send({ name: 'Other' })
      .expect(201);
    const theirs = await issue('theirs', other.body.id);

    const res = await stack.http.delete(`${keysPath()}/${theirs.id}`).set(admin).expect(404);
    expect(res.body.code).toBe('not_found');
    await stack.http.delete(`${keysPath()}/00000000-0000-7000-8000-000000000000`).set(admin).expect(404);
    await stack.http.delete(`${keysPath()}/not-a-uuid`).set(admin).expect(400);

    await stack.http.get(`/v1/workspaces/${other.body.id}`).set('x-api-key', theirs.key).expect(200);
    const ours = await stack.http.get(keysPath()).set(admin).expect(200);
    expect(ours.body.items.map((item: { id: string }) => item.id)).not.toContain(theirs.id);
  });

  it('documents the two routes in the OpenAPI document', async () => {
    const res = await stack.http.get('/openapi.json').expect(200);
    const list = res.body.paths['/v1/admin/workspaces/{workspaceId}/api-keys'].get;
    expect(Object.keys(list.responses)).toEqual(expect.arrayContaining(['200', '401', '404']));
    const revoke = res.body.paths['/v1/admin/workspaces/{workspaceId}/api-keys/{apiKeyId}'].delete;
    expect(Object.keys(revoke.responses)).toEqual(expect.arrayContaining(['204', '401', '404']));
    expect(JSON.stringify(res.body.components.schemas.ApiKey)).not.toMatch(/keyHash|"key"/);
  });

  describe('from the command line', () => {
    async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
      const child: ChildProcess = spawnFlightdeck(stack, args, { stdout: 'pipe', stderr: 'pipe' });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await exited(child);
      return { code: child.exitCode, stdout, stderr };
    }

    it('lists the keys and revokes one, which then answers 401', async () => {
      const issued = await issue('cli');
      await workspaceOf(issued.key).expect(200);

      const list = await run(['admin', 'api-keys', 'list', '--workspace', stack.workspaceId]);
      expect(list).toMatchObject({ code: 0, stderr: '' });
      const lines = list.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID\s+NAME\s+PREFIX\s+JOB AGENT\s+CREATED\s+LAST USED\s+REVOKED$/);
      const row = lines.find((line) => line.startsWith(issued.id))!;
      expect(row.split(/\s+/)).toEqual([
        issued.id,
        'cli',
        issued.key.slice(0, 12),
        '-',
        expect.stringMatching(/^\d{4}-/),
        expect.stringMatching(/^\d{4}-/),
        '-',
      ]);
      expect(list.stdout).not.toContain(issued.key);
      expect(list.stdout).not.toContain(hashApiKey(issued.key));

      const revoke = await run(['admin', 'api-keys', 'revoke', '--workspace', stack.workspaceId, issued.id]);
      expect(revoke).toMatchObject({ code: 0, stderr: '' });
      expect(revoke.stdout).toContain(`API key ${issued.id} (cli, ${issued.key.slice(0, 12)}…) revoked at`);
      await workspaceOf(issued.key).expect(401);
    }, 60_000);

    it('fails with a message for a key of another workspace and for a malformed id', async () => {
      const other = await stack.http.post('/v1/admin/workspaces').set(admin).send({ name: 'Elsewhere' });
      const theirs = await issue('elsewhere', other.body.id);
      const wrong = await run(['admin', 'api-keys', 'revoke', '--workspace', stack.workspaceId, theirs.id]);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toBe(`flightdeck: API key ${theirs.id} was not found\n`);
      const malformed = await run(['admin', 'api-keys', 'list', '--workspace', 'default']);
      expect(malformed.code).toBe(1);
      expect(malformed.stderr).toBe('flightdeck: --workspace must be a UUID, not "default"\n');
      await stack.http.get(`/v1/workspaces/${other.body.id}`).set('x-api-key', theirs.key).expect(200);
    }, 60_000);
  });
});
