import { Egress } from '../../../activities/egress';
import { createReleaseActivities } from '../../../activities/release';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/design.md "Invariants" 6: a worker that dies after a dispatch committed but before Temporal
 * recorded it gets the dispatch activity retried. The retry must answer what the first attempt
 * did, or the release waits forever for a job nobody completes (the crash test caught this).
 */
describe('a dispatch retried after it committed', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  it('answers the test runner’s schedule again, and leaves the job as the first attempt left it', async () => {
    const api = recordsApi(stack);
    await api.agent('slow-runner', 'test-runner', { status: 'successful', delaySeconds: 600 });
    const system = await api.system('Retry');
    await api.environment('prod', 'resource.metadata["env"] == "prod"', system);
    const deployment = await api.deployment('svc', system, { jobAgents: [{ ref: 'slow-runner' }] });
    await api.resource('node-0', 'service', { env: 'prod' });
    await api.version(deployment, '1.0.0');
    const [job] = await api.jobsSettleAt(1, '&status=in_progress', 'the dispatched job');

    const retry = await createReleaseActivities({
      orm: stack.orm,
      secrets: stack.secrets,
      rego: stack.rego,
      egress: new Egress(),
    }).dispatchJob(job!.id);
    expect(retry).toEqual({ kind: 'scheduled', afterSeconds: 600, status: 'successful', message: null });
    const [after] = await api.jobs();
    expect(after).toMatchObject({ id: job!.id, status: 'in_progress' });
  });
});
