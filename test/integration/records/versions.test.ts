import type { Response } from 'supertest';
import { CATALOG_TABLES, recordMaker, REDACTED, sqlOf, TIMESTAMP, UUID } from '../../helpers/recordFixtures';
import {
  expectFieldError,
  expectNothingWritten as expectNothingWrittenIn,
  expectProblem,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Deployment versions over HTTP: create, list by status and CEL, status moves by PATCH, sealed agent
 * configuration, validation. 401, another workspace's version (404) and duplicate tags (409): contract.test.ts.
 */
describe('deployment versions over HTTP', () => {
  let stack: TestStack;
  const { base, unique, createDeployment, createVersion } = recordMaker(() => stack);
  const sql = sqlOf(() => stack);
  const expectNothingWritten = (request: () => PromiseLike<Response>) =>
    expectNothingWrittenIn(stack, CATALOG_TABLES, request);
  const expectNothingWrittenTo = (
    table: (typeof CATALOG_TABLES)[number],
    request: () => PromiseLike<Response>,
  ): Promise<Response> => expectNothingWrittenIn(stack, [table], request);

  let deploymentId: string;
  const versionsOf = (id: string) => `${base()}/deployments/${id}/versions`;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    deploymentId = (await createDeployment({ name: 'Versioned' })).id;
  });
  afterAll(() => stack.close());

  it('creates a ready version (200) whose rollout is pending, and a building one named by its tag with no rollout', async () => {
    const ready = await stack.http
      .post(versionsOf(deploymentId))
      .set(stack.auth)
      .send({
        tag: '1.0.0',
        name: 'First',
        config: { image: 'web:1.0.0' },
        metadata: { channel: 'stable' },
      })
      .expect(200);
    expect(ready.body).toEqual({
      id: UUID,
      deploymentId,
      tag: '1.0.0',
      name: 'First',
      status: 'ready',
      config: { image: 'web:1.0.0' },
      jobAgentConfig: {},
      metadata: { channel: 'stable' },
      createdAt: TIMESTAMP,
      updatedAt: TIMESTAMP,
      rollout: { status: 'pending', releaseCount: 0, completedAt: null },
      dependencies: {},
    });

    const building = await stack.http
      .post(versionsOf(deploymentId))
      .set(stack.auth)
      .send({ tag: '1.1.0-rc1', status: 'building' })
      .expect(200);
    expect(building.body).toEqual({
      id: UUID,
      deploymentId,
      tag: '1.1.0-rc1',
      name: '1.1.0-rc1',
      status: 'building',
      config: {},
      jobAgentConfig: {},
      metadata: {},
      createdAt: TIMESTAMP,
      updatedAt: TIMESTAMP,
      rollout: null,
      dependencies: {},
    });

    const fetched = await stack.http
      .get(`${base()}/deployment-versions/${ready.body.id}`)
      .set(stack.auth)
      .expect(200);
    expect(fetched.body).toEqual(ready.body);
    const viaAlias = await stack.http
      .get(`${base()}/deploymentversions/${ready.body.id}`)
      .set(stack.auth)
      .expect(200);
    expect(viaAlias.body).toEqual(ready.body);
  });

  it('lists versions newest first, filtered by status and by a CEL expression over `version`', async () => {
    const deployment = await createDeployment();
    const v1 = await createVersion(deployment.id, { tag: 'v1', metadata: { channel: 'stable' } });
    const v2 = await createVersion(deployment.id, { tag: 'v2', status: 'building' });
    const v3 = await createVersion(deployment.id, { tag: 'v3', metadata: { channel: 'beta' } });

    const all = await stack.http.get(versionsOf(deployment.id)).set(stack.auth).expect(200);
    expect(all.body).toEqual({ items: [v3, v2, v1], total: 3, limit: 50, offset: 0 });

    const paged = await stack.http
      .get(versionsOf(deployment.id))
      .query({ limit: 1, offset: 1 })
      .set(stack.auth)
      .expect(200);
    expect(paged.body).toEqual({ items: [v2], total: 3, limit: 1, offset: 1 });

    const ready = await stack.http
      .get(versionsOf(deployment.id))
      .query({ status: 'ready' })
      .set(stack.auth)
      .expect(200);
    expect(ready.body).toEqual({ items: [v3, v1], total: 2, limit: 50, offset: 0 });

    const stable = await stack.http
      .get(versionsOf(deployment.id))
      .query({ cel: 'version.metadata["channel"] == "stable"' })
      .set(stack.auth)
      .expect(200);
    expect(stable.body).toEqual({ items: [v1], total: 1, totalIsExact: true, limit: 50, offset: 0 });

    const readyBeta = await stack.http
      .get(versionsOf(deployment.id))
      .query({ status: 'ready', cel: 'version.tag.startsWith("v") && version.tag != "v1"' })
      .set(stack.auth)
      .expect(200);
    expect(readyBeta.body).toEqual({ items: [v3], total: 1, totalIsExact: true, limit: 50, offset: 0 });
  });

  it('moves a building version to ready by PATCH (202), which makes its rollout pending', async () => {
    const version = await createVersion(deploymentId, { tag: unique('building'), status: 'building' });
    const outboxBefore = await sql<{ count: number }[]>(
      `SELECT count(*)::int AS count FROM outbox WHERE kind = 'version.ready' AND payload->>'versionId' = ?`,
      [version.id],
    );
    expect(outboxBefore).toEqual([{ count: 0 }]);

    const moved = await stack.http
      .patch(`${base()}/deployment-versions/${version.id}`)
      .set(stack.auth)
      .send({ status: 'ready' })
      .expect(202);
    expect(moved.body).toEqual({
      ...version,
      status: 'ready',
      updatedAt: TIMESTAMP,
      rollout: { status: 'pending', releaseCount: 0, completedAt: null },
    });
    const fetched = await stack.http
      .get(`${base()}/deployment-versions/${version.id}`)
      .set(stack.auth)
      .expect(200);
    expect(fetched.body).toEqual(moved.body);

    const outboxAfter = await sql<{ payload: Record<string, string> }[]>(
      `SELECT payload FROM outbox WHERE kind = 'version.ready' AND payload->>'versionId' = ?`,
      [version.id],
    );
    expect(outboxAfter).toEqual([
      {
        payload: {
          kind: 'version.ready',
          workspaceId: stack.workspaceId,
          deploymentId,
          versionId: version.id,
        },
      },
    ]);
  });

  it('accepts a PATCH that keeps a ready version ready (202) without starting a second rollout', async () => {
    const version = await createVersion(deploymentId, { tag: unique('stay-ready') });
    const res = await expectNothingWrittenTo('outbox', () =>
      stack.http
        .patch(`${base()}/deployment-versions/${version.id}`)
        .set(stack.auth)
        .send({ status: 'ready', metadata: { note: 'still ready' } })
        .expect(202),
    );
    expect(res.body).toEqual({ ...version, metadata: { note: 'still ready' }, updatedAt: TIMESTAMP });
  });

  it('hides a sensitive jobAgentConfig key of a version and keeps it when PATCHed back', async () => {
    const created = await stack.http
      .post(versionsOf(deploymentId))
      .set(stack.auth)
      .send({
        tag: unique('secret'),
        status: 'building',
        jobAgentConfig: { ref: 'main', token: 'version-secret' },
      })
      .expect(200);
    expect(created.body.jobAgentConfig).toEqual({ ref: 'main', token: REDACTED });
    const storedToken = async () => {
      const rows = await sql<{ token: string }[]>(
        `SELECT job_agent_config->>'token' AS token FROM deployment_version WHERE id = ?`,
        [created.body.id],
      );
      return rows[0]!.token;
    };
    const sealed = await storedToken();
    expect(sealed).toMatch(/^fd2:/);

    const patched = await stack.http
      .patch(`${base()}/deployment-versions/${created.body.id}`)
      .set(stack.auth)
      .send({ jobAgentConfig: { ref: 'release', token: REDACTED } })
      .expect(202);
    expect(patched.body.jobAgentConfig).toEqual({ ref: 'release', token: REDACTED });
    expect(await storedToken()).toBe(sealed);
    expect(stack.secrets.forRecord(stack.workspaceId, 'version', created.body.id).open(sealed)).toBe(
      'version-secret',
    );
  });

  it('moves building → failed through the /deploymentversions alias, and ready → failed (202)', async () => {
    const building = await createVersion(deploymentId, { tag: unique('to-fail'), status: 'building' });
    const failed = await stack.http
      .patch(`${base()}/deploymentversions/${building.id}`)
      .set(stack.auth)
      .send({ status: 'failed' })
      .expect(202);
    expect(failed.body).toEqual({ ...building, status: 'failed', updatedAt: TIMESTAMP });

    const ready = await createVersion(deploymentId, { tag: unique('ready-to-fail') });
    const readyFailed = await stack.http
      .patch(`${base()}/deployment-versions/${ready.id}`)
      .set(stack.auth)
      .send({ status: 'failed', name: 'Broken build' })
      .expect(202);
    expect(readyFailed.body).toEqual({
      ...ready,
      status: 'failed',
      name: 'Broken build',
      updatedAt: TIMESTAMP,
    });
  });

  it.each([
    ['ready', 'building'],
    ['failed', 'ready'],
    ['failed', 'building'],
  ] as const)(
    'refuses the move %s → %s with 409 invalid_status_move and writes nothing',
    async (from, to) => {
      const version = await createVersion(deploymentId, {
        tag: unique(`from-${from}`),
        status: from === 'failed' ? 'building' : from,
      });
      if (from === 'failed') {
        await stack.http
          .patch(`${base()}/deployment-versions/${version.id}`)
          .set(stack.auth)
          .send({ status: 'failed' })
          .expect(202);
      }
      const before = await stack.http
        .get(`${base()}/deployment-versions/${version.id}`)
        .set(stack.auth)
        .expect(200);

      const res = await expectNothingWritten(() =>
        stack.http.patch(`${base()}/deployment-versions/${version.id}`).set(stack.auth).send({ status: to }),
      );
      expectProblem(res, 409, 'invalid_status_move');
      expect(res.body.detail).toBe(`A version cannot move from ${from} to ${to}`);
      const after = await stack.http
        .get(`${base()}/deployment-versions/${version.id}`)
        .set(stack.auth)
        .expect(200);
      expect(after.body).toEqual(before.body);
    },
  );

  it('accepts the tag of a version of another deployment', async () => {
    const existing = await createVersion(deploymentId, { tag: unique('shared-tag'), status: 'building' });
    const otherDeployment = await createDeployment();
    await createVersion(otherDeployment.id, { tag: existing.tag });
  });

  it.each([
    ['an empty tag', { tag: '  ' }, 'body.tag'],
    ['an unknown status', { tag: 'bad-status', status: 'shipped' }, 'body.status'],
    ['config that is not an object', { tag: 'bad-config', config: 'image=web' }, 'body.config'],
  ])('refuses a version with %s with 400 naming the field, and writes nothing', async (_, body, path) => {
    const res = await expectNothingWritten(() =>
      stack.http.post(versionsOf(deploymentId)).set(stack.auth).send(body),
    );
    expectFieldError(res, path);
  });

  it('refuses a PATCH with an unknown status with 400 and writes nothing', async () => {
    const version = await createVersion(deploymentId, { tag: unique('patch-400'), status: 'building' });
    const res = await expectNothingWritten(() =>
      stack.http
        .patch(`${base()}/deployment-versions/${version.id}`)
        .set(stack.auth)
        .send({ status: 'deployed' }),
    );
    expectFieldError(res, 'body.status');
  });

  it('refuses a list filter that is not valid CEL with 400 giving its position', async () => {
    const res = await expectNothingWritten(() =>
      stack.http.get(versionsOf(deploymentId)).query({ cel: 'version.tag ==' }).set(stack.auth),
    );
    expectFieldError(res, 'query.cel', 'line 1, column');
  });

  it('answers a filtered versions list with exactly {items, total, totalIsExact, limit, offset}', async () => {
    const deployment = await createDeployment();
    await createVersion(deployment.id, { tag: '1.0.0' });
    const res = await stack.http
      .get(`${base()}/deployments/${deployment.id}/versions`)
      .query({ status: 'ready', cel: 'version.tag == "1.0.0"' })
      .set(stack.auth)
      .expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['items', 'limit', 'offset', 'total', 'totalIsExact']);
    expect(res.body).toMatchObject({ total: 1, limit: 50, offset: 0 });
  });
});
