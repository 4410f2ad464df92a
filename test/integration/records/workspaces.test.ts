import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../../workflows/ids';
import { eventually } from '../../helpers/eventually';
import {
  createOtherWorkspace,
  expectFieldError,
  expectNothingWritten,
  expectProblem,
} from '../../helpers/records';
import { pullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

const ADMIN_TOKEN = 'workspace-admin-token-0123456789';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const WATCHED_TABLES = ['workspace', 'api_key'] as const;

describe('workspaces at Ctrlplane’s paths', () => {
  let stack: TestStack;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN });
  });
  afterAll(() => stack.close());

  const create = (body: object, auth: Record<string, string> = admin) =>
    stack.http.post('/v1/workspaces').set(auth).send(body);

  describe('create', () => {
    it('creates a workspace with the operator token (201) and shows its first API key once', async () => {
      const res = await create({ name: 'Payments', slug: 'payments' }).expect(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Payments',
        slug: 'payments',
        createdAt: expect.stringMatching(RFC3339),
        apiKey: {
          id: expect.stringMatching(UUID),
          workspaceId: res.body.id,
          name: 'first key',
          prefix: expect.any(String),
          jobAgentId: null,
          key: expect.stringMatching(/^fdk_/),
          createdAt: expect.stringMatching(RFC3339),
        },
      });
      // The key works, for this workspace.
      const key = { 'x-api-key': res.body.apiKey.key };
      await stack.http.get(`/v1/workspaces/${res.body.id}`).set(key).expect(200);
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(key).expect(404);
    });

    it('answers 409 for a taken slug, 400 for a bad body, 401 without the operator token; creating nothing', async () => {
      expectProblem(
        await expectNothingWritten(stack, WATCHED_TABLES, () => create({ name: 'Again', slug: 'payments' })),
        409,
        'duplicate',
      );
      expectFieldError(
        await expectNothingWritten(stack, WATCHED_TABLES, () => create({ slug: 'no-name' })),
        'body.name',
      );
      expectFieldError(
        await expectNothingWritten(stack, WATCHED_TABLES, () => create({ name: 'Bad', slug: 'Not A Slug' })),
        'body.slug',
      );
      expectProblem(
        await expectNothingWritten(stack, WATCHED_TABLES, () => create({ name: 'Keyed' }, stack.auth)),
        401,
        'unauthenticated',
      );
    });
  });

  describe('get by slug', () => {
    it("answers the key's own workspace by its slug, as ctrlc needs it (200, JSON, a UUID id, RFC 3339)", async () => {
      const own = await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
      const res = await stack.http.get(`/v1/workspaces/slug/${own.body.slug}`).set(stack.auth).expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual(own.body);
      expect(res.body.id).toMatch(UUID);
      expect(res.body.createdAt).toMatch(RFC3339);
      expect(res.body).not.toHaveProperty('apiKey');
    });

    it("answers 404 for another workspace's slug and for an unknown one", async () => {
      expectProblem(await stack.http.get('/v1/workspaces/slug/payments').set(stack.auth), 404, 'not_found');
      expectProblem(
        await stack.http.get('/v1/workspaces/slug/nothing-here').set(stack.auth),
        404,
        'not_found',
      );
      await stack.http.get('/v1/workspaces/slug/payments').expect(401);
    });
  });

  describe('update', () => {
    it('renames a workspace and changes its slug (200); fields left out stay', async () => {
      const ws = `/v1/workspaces/${stack.workspaceId}`;
      const renamed = await stack.http.patch(ws).set(stack.auth).send({ name: 'Renamed' }).expect(200);
      expect(renamed.body).toMatchObject({ id: stack.workspaceId, name: 'Renamed' });
      const moved = await stack.http.patch(ws).set(stack.auth).send({ slug: 'renamed' }).expect(200);
      expect(moved.body).toMatchObject({ id: stack.workspaceId, name: 'Renamed', slug: 'renamed' });
      await stack.http.get('/v1/workspaces/slug/renamed').set(stack.auth).expect(200);
    });

    it("refuses a taken slug (409), a bad one (400) and another workspace's id (404), changing nothing", async () => {
      const ws = `/v1/workspaces/${stack.workspaceId}`;
      const other = await createOtherWorkspace(stack, 'Neighbours');
      const send = (path: string, body: object) => () => stack.http.patch(path).set(stack.auth).send(body);
      expectProblem(
        await expectNothingWritten(stack, WATCHED_TABLES, send(ws, { slug: 'payments' })),
        409,
        'duplicate',
      );
      expectFieldError(
        await expectNothingWritten(stack, WATCHED_TABLES, send(ws, { slug: 'UPPER' })),
        'body.slug',
      );
      expectFieldError(
        await expectNothingWritten(stack, WATCHED_TABLES, send(ws, { name: '' })),
        'body.name',
      );
      expectProblem(
        await expectNothingWritten(
          stack,
          WATCHED_TABLES,
          send(`/v1/workspaces/${other.id}`, { name: 'Mine' }),
        ),
        404,
        'not_found',
      );
    });
  });

  describe('delete', () => {
    it('deletes a workspace with the operator token (204) with every record and key of it', async () => {
      const created = await create({ name: 'Short lived', slug: 'short-lived' }).expect(201);
      const key = { 'x-api-key': created.body.apiKey.key };
      const ws = `/v1/workspaces/${created.body.id}`;
      await stack.http
        .put(`${ws}/resources/identifier/vm-1`)
        .set(key)
        .send({ name: 'vm', version: 'v1', kind: 'vm' })
        .expect(202);
      await stack.http.put(`${ws}/resource-providers`).set(key).send({ id: '', name: 'scanner' }).expect(202);

      // A key of the workspace is not enough: deleting a workspace is the operator's.
      await stack.http.delete(ws).set(key).expect(401);
      const res = await stack.http.delete(ws).set(admin).expect(204);
      expect(res.text).toBe('');

      await stack.http.get(ws).set(key).expect(401);
      const left = await stack.orm.em
        .fork()
        .getConnection()
        .execute<{ rows: number }[]>(
          `SELECT (SELECT count(*) FROM resource WHERE workspace_id = ?)
                + (SELECT count(*) FROM resource_provider WHERE workspace_id = ?)
                + (SELECT count(*) FROM api_key WHERE workspace_id = ?) AS rows`,
          [created.body.id, created.body.id, created.body.id],
        );
      expect(Number(left[0]!.rows)).toBe(0);
      // The stack's own workspace is untouched.
      await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(200);
    });

    it('answers 404 for an unknown workspace', async () => {
      expectProblem(await stack.http.delete(`/v1/workspaces/${randomUUID()}`).set(admin), 404, 'not_found');
    });
  });
});

describe('deleting a workspace while its releases run', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ adminToken: ADMIN_TOKEN });
  });
  afterAll(() => stack.close());

  it('wakes their workflows, which find the release gone and end', async () => {
    const { jobs } = await pullFixture(stack, 'doomed');
    const release = stack.temporal.workflow.getHandle(workflowIds.release(jobs[0]!.releaseId));
    expect((await release.describe()).status.name).toBe('RUNNING');

    await stack.http
      .delete(`/v1/workspaces/${stack.workspaceId}`)
      .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
      .expect(204);
    await eventually(
      async () => ((await release.describe()).status.name === 'COMPLETED' ? true : undefined),
      {
        what: 'the release workflow to end',
        timeoutMs: 30_000,
      },
    );
    await stack.http.get(`/v1/workspaces/${stack.workspaceId}`).set(stack.auth).expect(401);
  });
});
