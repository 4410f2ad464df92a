import { recordsApi } from '../../helpers/orchestration';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** Ctrlplane's job with its release, and a target's desired release (docs/api.md "Conventions"). */
describe('a job with its release, and desired releases', () => {
  let stack: TestStack;
  let agent: PullFixture;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;

  beforeAll(async () => {
    stack = await startTestStack();
    agent = await pullFixture(stack, 'with-release', { resources: 1 });
  });
  afterAll(() => stack.close());

  it('answers a job with its release, deployment, environment and resource', async () => {
    const job = agent.jobs[0]!;
    const res = await stack.http.get(`${ws()}/jobs/${job.id}/with-release`).set(stack.auth).expect(200);
    expect(res.body.job).toMatchObject({ id: job.id, releaseId: job.releaseId, status: 'queued' });
    expect(res.body.release).toMatchObject({ id: job.releaseId, deploymentId: agent.deploymentId });
    expect(res.body.deployment).toMatchObject({ id: agent.deploymentId, slug: 'svc-with-release' });
    expect(res.body.environment).toMatchObject({
      id: res.body.release.environmentId,
      name: 'env-with-release',
    });
    expect(res.body.resource).toMatchObject({
      id: res.body.release.resourceId,
      identifier: 'with-release-node-0',
    });
    const unknown = await stack.http
      .get(`${ws()}/jobs/01a21103-0000-7000-8000-000000000000/with-release`)
      .set(stack.auth);
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/problem\+json/);
  });

  it("answers a target's desired release, nothing for a target without one, 404 for no target", async () => {
    const { release } = (
      await stack.http.get(`${ws()}/jobs/${agent.jobs[0]!.id}/with-release`).set(stack.auth)
    ).body as { release: { id: string; resourceId: string; environmentId: string; deploymentId: string } };
    const key = `${release.resourceId}-${release.environmentId}-${release.deploymentId}`;
    const desired = await stack.http
      .get(`${ws()}/release-targets/${key}/desired-release`)
      .set(stack.auth)
      .expect(200);
    expect(desired.body).toEqual({ desiredRelease: expect.objectContaining({ id: release.id }) });

    // A second deployment in the same system and environment, without a version: a target, no release.
    const api = recordsApi(stack);
    const { system } = await api
      .get<{ systemIds: string[] }>(`/deployments/${release.deploymentId}`)
      .then((d) => ({
        system: d.systemIds[0]!,
      }));
    const idle = await api.deployment('idle-with-release', system);
    const idleKey = `${release.resourceId}-${release.environmentId}-${idle}`;
    const none = await stack.http
      .get(`${ws()}/release-targets/${idleKey}/desired-release`)
      .set(stack.auth)
      .expect(200);
    expect(none.body).toEqual({});
    await stack.http.get(`${ws()}/release-targets/not-a-key/desired-release`).set(stack.auth).expect(404);
  });
});
