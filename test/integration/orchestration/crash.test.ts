import type { ChildProcess } from 'node:child_process';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { exited, spawnFlightdeck } from '../../helpers/processes';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/design.md "Invariants" 6 (for the worker): kill -9 of the worker in the middle of releases loses
 * nothing. Another worker picks the workflows up from Temporal's history; every release ends, and
 * no job is created twice.
 */
describe('a worker killed mid-release', () => {
  let stack: TestStack;
  const workers: ChildProcess[] = [];

  function startWorker(): ChildProcess {
    const child = spawnFlightdeck(stack, ['worker']);
    workers.push(child);
    return child;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(async () => {
    for (const worker of workers) if (worker.exitCode === null) worker.kill('SIGKILL');
    await stack.close();
  });

  it('finishes every release exactly once after kill -9 and a new worker', async () => {
    const api = recordsApi(stack);
    await api.agent('runner', 'test-runner', { status: 'successful', delaySeconds: 4 });
    const system = await api.system('Crash');
    await api.environment('prod', 'resource.metadata["env"] == "prod"', system);
    const deployment = await api.deployment('svc', system, { jobAgents: [{ ref: 'runner' }] });
    const count = 8;
    for (let n = 0; n < count; n++) await api.resource(`node-${n}`, 'service', { env: 'prod' });
    await api.version(deployment, '1.0.0');

    const first = startWorker();
    await eventually(async () => (await api.jobs('&status=in_progress')).length >= count / 2, {
      what: 'jobs running on the first worker',
      timeoutMs: 60_000,
    });
    first.kill('SIGKILL');
    await exited(first);

    startWorker();
    const releases = await eventually(
      async () => {
        const all = await api.releases();
        if (all.length === count && all.every((release) => release.phase === 'succeeded')) return all;
        // Thrown, not returned: on a timeout, the last state seen is part of the message.
        const jobs = await api.jobs();
        throw new Error(
          `releases ${JSON.stringify(all.map((release) => release.phase))}, jobs ${JSON.stringify(jobs.map((job) => job.status))}`,
        );
      },
      { what: 'every release to succeed after the restart', timeoutMs: 150_000 },
    );
    const jobs = await api.jobs();
    expect(jobs).toHaveLength(count);
    expect(new Set(jobs.map((job) => job.releaseId)).size).toBe(count);
    expect(jobs.every((job) => job.status === 'successful')).toBe(true);
    expect(new Set(releases.map((release) => release.resourceId)).size).toBe(count);
  }, 240_000); // two process starts and Temporal's task timeouts for the dead worker, on a loaded machine

  it('keeps a rollout’s bake when the worker is killed in the middle of it: the next wave starts when it ends', async () => {
    const api = recordsApi(stack);
    await api.agent('baker', 'test-runner', { status: 'successful' });
    const system = await api.system('Baking');
    await api.environment('bake', 'resource.metadata["env"] == "bake"', system);
    const deployment = await api.deployment('baked', system, { jobAgents: [{ ref: 'baker' }] });
    await api.resource('bake-canary', 'service', { env: 'bake', wave: 'canary' });
    await api.resource('bake-rest', 'service', { env: 'bake', wave: 'rest' });
    const bakeSeconds = 12;
    await api.policy({
      name: 'baked waves',
      selector: 'deployment.slug == "baked"',
      rules: [
        {
          waves: {
            waves: [{ name: 'canary', selector: 'resource.metadata["wave"] == "canary"', bakeSeconds }],
          },
        },
      ],
    });
    await api.version(deployment, '1.0.0');

    const first = startWorker();
    const canary = await eventually(
      async () => (await api.releases(`&deploymentId=${deployment}`)).find((r) => r.phase === 'succeeded'),
      { what: 'the canary to succeed', timeoutMs: 60_000 },
    );
    const canaryEnded = Date.parse(
      (await api.get<{ completedAt: string }>(`/releases/${canary.id}`)).completedAt,
    );
    first.kill('SIGKILL');
    await exited(first);
    startWorker();

    const rest = await eventually(
      async () => (await api.jobs(`&deploymentId=${deployment}`)).find((job) => job.releaseId !== canary.id),
      { what: 'the rest wave’s job after the bake', timeoutMs: 120_000 },
    );
    const started = Date.parse((await api.get<{ createdAt: string }>(`/jobs/${rest.id}`)).createdAt);
    expect(started - canaryEnded).toBeGreaterThanOrEqual(bakeSeconds * 1000);
  }, 240_000);
});
