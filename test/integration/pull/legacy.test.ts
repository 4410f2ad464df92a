import { recordsApi } from '../../helpers/orchestration';
import { pullFixture, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/behaviour.md "Legacy agent polling flow": queue/next hands out the agent's open jobs
 * without an external id in the legacy item shape; PATCH moves a job (legacy status names too) and
 * the release follows.
 */
describe('pull agents, legacy polling', () => {
  let stack: TestStack;
  let fixture: PullFixture;

  beforeAll(async () => {
    stack = await startTestStack();
    fixture = await pullFixture(stack, 'legacy', {
      resources: 2,
      variables: { REPLICAS: '3', REGION: 'eu-west-1' },
    });
  });
  afterAll(() => stack.close());

  const queueNext = () => stack.http.get(`/api/v1/job-agents/${fixture.agentId}/queue/next`).set(stack.auth);
  const patch = (jobId: string, body: object) =>
    stack.http.patch(`/api/v1/jobs/${jobId}`).set(stack.auth).send(body);

  it('answers queue/next with the legacy item shape for open jobs without an external id', async () => {
    const res = await queueNext();
    expect(res.status).toBe(200);
    expect(res.body.jobs).toHaveLength(2);
    const resources = res.body.jobs.map(
      (item: { release: { resource: { identifier: string } } }) => item.release.resource.identifier,
    );
    expect(resources.sort()).toEqual(['legacy-node-0', 'legacy-node-1']);
    for (const item of res.body.jobs) {
      expect(item).toEqual({
        id: expect.any(String),
        release: {
          id: expect.any(String),
          version: { tag: '1.0.0', config: {} },
          environment: { name: 'env-legacy' },
          resource: { identifier: expect.stringMatching(/^legacy-node-/), config: {} },
          variables: { REPLICAS: '3', REGION: 'eu-west-1' },
        },
        jobAgentConfig: expect.objectContaining({ image: 'legacy:1.0.0' }),
      });
    }
    expect(res.body.jobs.map((item: { id: string }) => item.id).sort()).toEqual(
      fixture.jobs.map((job) => job.id).sort(),
    );
  });

  it('moves a job by PATCH with legacy names, hides it once it has an external id, and advances the release', async () => {
    const api = recordsApi(stack);
    const [first, second] = fixture.jobs;

    const started = await patch(first!.id, { status: 'inProgress', externalId: 'run-17' });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ id: first!.id, status: 'in_progress', externalId: 'run-17' });
    const queue = (await queueNext()).body.jobs.map((item: { id: string }) => item.id);
    expect(queue).toEqual([second!.id]);

    const done = await patch(first!.id, { status: 'completed', message: 'rolled out' });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'successful', message: 'rolled out' });
    await api.releaseWith(
      (release) => release.id === first!.releaseId && release.phase === 'succeeded',
      'the release of the completed job to succeed',
    );

    const failed = await patch(second!.id, { status: 'failed' });
    expect(failed.body.status).toBe('failure');
    expect((await queueNext()).body.jobs).toEqual([]);
  });

  it('refuses a bad update with problem+json and changes nothing', async () => {
    const job = fixture.jobs[0]!;
    const empty = await patch(job.id, {});
    expect(empty.status).toBe(400);
    expect(empty.headers['content-type']).toMatch(/application\/problem\+json/);
    const unknown = await patch(job.id, { status: 'exploded' });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toMatch(/unknown job status/);
    const backwards = await patch(job.id, { status: 'pending' });
    expect(backwards.status).toBe(409);
    const job2 = await stack.http.get(`/v1/workspaces/${stack.workspaceId}/jobs/${job.id}`).set(stack.auth);
    expect(job2.body.status).toBe('successful');
  });
});
