import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowHandle } from '@temporalio/client';
import { evaluateGates } from '../../../domain/gates';
import type { Metric } from '../../../domain/releaseProgress';
import { wakeSignal } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import { releaseWorkflow, type ReleaseWorkflowInput } from '../../../workflows/release';
import { eventually } from '../../helpers/eventually';
import { FakeRelease } from '../../helpers/fakeRelease';
import { recordAfterEach } from '../../helpers/histories';
import { releaseFacts } from '../../helpers/releaseFacts';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/**
 * The release workflow on its own: real workflow code and real timers on the dev server, its
 * activities working on a release held in memory (test/helpers/fakeRelease.ts).
 */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

const seconds = (n: number, from = Date.now()) => new Date(from + n * 1000);

/** Workflows started by the current test, each recorded as its fixture after it. */
const recordAfterTest = recordAfterEach(() => env.client.workflow);

async function startRelease(
  taskQueue: string,
  release: FakeRelease,
  fixture: string,
  input: Partial<ReleaseWorkflowInput> = {},
): Promise<WorkflowHandle<typeof releaseWorkflow>> {
  const handle = await env.client.workflow.start(releaseWorkflow, {
    taskQueue,
    workflowId: workflowIds.release(release.id),
    args: [{ releaseId: release.id, ...input }],
  });
  recordAfterTest(handle, fixture);
  return handle;
}

/** Runs `test` with a worker whose activities work on `release`. */
function withRelease<T>(release: FakeRelease, test: (taskQueue: string) => Promise<T>): Promise<T> {
  return withWorker(env, release.activities(), test);
}

const httpMetric = (overrides: Partial<Metric> = {}): Metric => ({
  name: 'health',
  intervalSeconds: 1,
  count: 2,
  provider: {
    type: 'http',
    url: 'http://service.invalid/health',
    method: 'GET',
    timeoutSeconds: 5,
  } as Metric['provider'],
  successCondition: 'result.ok',
  failureThreshold: 0,
  ...overrides,
});

describe('releaseWorkflow', () => {
  it('starts the jobs when the gates pass, queues a pull job, and succeeds on its report', async () => {
    const release = new FakeRelease(randomUUID());
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-pull-succeeded');
      await release.report(handle, 'successful');
      expect(await handle.result()).toEqual({
        phase: 'succeeded',
        reason: 'every job succeeded and verified',
      });
    });
    expect(release.evaluations.map((e) => e.decision)).toEqual(['proceed']);
    expect(release.calls.filter((name) => name === 'dispatchJob')).toHaveLength(1);
    expect(release.finished?.phase).toBe('succeeded');
  });

  it('dispatches a pushed job step by step, follows its run, and succeeds when it ends well', async () => {
    const release = new FakeRelease(randomUUID());
    release.agentType = 'github-app';
    const steps: (string | undefined)[] = [];
    release.dispatchAnswer = (_jobId, step) => {
      steps.push(step?.name);
      return step ? { kind: 'triggered' } : { kind: 'next', step: { name: 'dispatch', state: { run: '7' } } };
    };
    let looks = 0;
    release.followAnswer = () => {
      looks += 1;
      if (looks < 2) return { done: false };
      release.setJobStatus('successful');
      return { done: true, changed: true };
    };
    const outcome = await withRelease(release, async (taskQueue) =>
      (await startRelease(taskQueue, release, 'release-push-succeeded')).result(),
    );
    expect(outcome.phase).toBe('succeeded');
    expect(steps).toEqual([undefined, 'dispatch']);
    expect(release.calls.filter((name) => name === 'followJob')).toHaveLength(2);
  });

  it('waits for a deny window to close, then proceeds', async () => {
    const release = new FakeRelease(randomUUID());
    await withRelease(release, async (taskQueue) => {
      const now = new Date();
      // On a whole second: the rule's DTSTART has no milliseconds.
      const closesAt = new Date(Math.ceil(seconds(2, now.getTime()).getTime() / 1000) * 1000);
      // A one-minute deny window that started 58 s ago.
      const opened = new Date(closesAt.getTime() - 60_000).toISOString().replace(/[-:]|\.\d{3}/g, '');
      release.facts = releaseFacts(now, {}, [
        {
          deploymentWindow: {
            rrule: `DTSTART:${opened}\nRRULE:FREQ=DAILY`,
            durationMinutes: 1,
            timezone: 'UTC',
            allowWindow: false,
          },
        },
      ]);
      const handle = await startRelease(taskQueue, release, 'release-window-wait');
      await eventually(() => release.jobs.length === 1, { timeoutMs: 15_000, what: 'the job' });
      expect(Date.now()).toBeGreaterThanOrEqual(closesAt.getTime());
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.evaluations.map((e) => e.decision)).toEqual(['wait', 'proceed']);
    expect(release.evaluations[0]!.reason).toMatch(/inside a deny window/);
  });

  it('waits out the soak time of the environment it depends on', async () => {
    const release = new FakeRelease(randomUUID());
    // Three seconds of soak time after the success in staging, from when the release starts.
    const soak = (now: Date) =>
      releaseFacts(
        now,
        {
          progression: [
            {
              ruleId: 'rule-0',
              environments: [{ id: 'staging', name: 'staging', targets: 1, successes: [now.toISOString()] }],
            },
          ],
        },
        [
          {
            environmentProgression: {
              dependsOnEnvironmentSelector: 'true',
              minimumSuccessPercentage: 100,
              minimumSoakTimeMinutes: 0.05,
              successStatuses: ['successful'],
            },
          },
        ],
      );
    await withRelease(release, async (taskQueue) => {
      const started = Date.now();
      release.facts = soak(new Date(started));
      const handle = await startRelease(taskQueue, release, 'release-soak-wait');
      await eventually(() => release.jobs.length === 1, { timeoutMs: 15_000, what: 'the job' });
      expect(Date.now()).toBeGreaterThanOrEqual(started + 3_000);
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.evaluations[0]!.reason).toMatch(/soaking until/);
    expect(release.evaluations.map((e) => e.decision)).toEqual(['wait', 'proceed']);
  });

  it('waits for an approval without a timer, and proceeds when one arrives', async () => {
    const release = new FakeRelease(randomUUID());
    release.facts = releaseFacts(new Date(), {}, [{ anyApproval: { minApprovals: 1 } }]);
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-approved');
      await eventually(() => release.evaluations.length === 1, { what: 'the first evaluation' });
      expect(release.evaluations[0]).toMatchObject({ decision: 'wait' });
      expect(release.evaluations[0]!.nextEvaluationAt).toBeUndefined();
      release.facts.approvals.push({
        userId: 'u1',
        userName: 'Ada',
        status: 'approved',
        reason: null,
        at: new Date().toISOString(),
      });
      await handle.signal(wakeSignal);
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.evaluations.map((e) => e.decision)).toEqual(['wait', 'proceed']);
  });

  it('passes an approval rule under a policy skip, and records why', async () => {
    const release = new FakeRelease(randomUUID());
    const until = seconds(3600).toISOString();
    release.facts = releaseFacts(
      new Date(),
      {
        skips: [
          {
            id: 's1',
            ruleId: 'rule-0',
            reason: 'hotfix',
            expiresAt: until,
            createdBy: { id: 'k1', name: 'Ada' },
          },
        ],
      },
      [{ anyApproval: { minApprovals: 1 } }],
    );
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-skipped');
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.evaluations.map((e) => e.decision)).toEqual(['proceed']);
    expect(release.evaluations[0]!.rules.find((rule) => rule.ruleId === 'rule-0')?.reason).toBe(
      `skipped by Ada until ${until}: hotfix`,
    );
  });

  it('waits at a block hold, says who, why and until when, and goes on by itself when it expires', async () => {
    const release = new FakeRelease(randomUUID());
    const until = seconds(1.5).toISOString();
    release.facts = releaseFacts(new Date(), {
      holds: [
        {
          id: 'h1',
          effect: 'block',
          reason: 'incident',
          expiresAt: until,
          createdBy: { id: 'k1', name: 'Ada' },
        },
      ],
    });
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-held');
      await eventually(async () => release.evaluations.some((e) => e.decision === 'proceed'), {
        what: 'the hold to expire and the release to proceed',
      });
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.evaluations.map((e) => e.decision)).toEqual(['wait', 'proceed']);
    expect(release.evaluations[0]).toMatchObject({
      reason: `held by Ada until ${until}: incident`,
      nextEvaluationAt: until,
    });
  });

  it('looks again by itself when a wake is lost, backing off while nothing changes', async () => {
    // The idle waits as the test's clock: 400 ms doubling up to 1.6 s instead of 10 minutes to 6 hours.
    const idleWaits = { firstMs: 400, longestMs: 1_600 };
    const release = new FakeRelease(randomUUID());
    release.facts = releaseFacts(new Date(), {}, [{ anyApproval: { minApprovals: 1 } }]);
    const lookedAt: number[] = [];
    const activities = release.activities();
    const loadReleaseFacts: typeof activities.loadReleaseFacts = async (...args) => {
      lookedAt.push(Date.now());
      return activities.loadReleaseFacts(...args);
    };
    await withWorker(env, { ...activities, loadReleaseFacts }, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-idle-back-off', { idleWaits });
      await eventually(() => lookedAt.length === 5, { what: 'five looks without a wake', timeoutMs: 15_000 });
      // Each wait is its idle wait plus up to half again (spread), never less: 400, 800, 1,600, 1,600.
      const gaps = lookedAt.slice(1).map((at, i) => at - lookedAt[i]!);
      // The upper bounds allow a second of timer and scheduling lag on a loaded CI machine.
      [400, 800, 1_600, 1_600].forEach((wait, i) => {
        expect(gaps[i]).toBeGreaterThanOrEqual(wait);
        expect(gaps[i]).toBeLessThan(wait * 1.5 + 1_000);
      });

      // A wake that changes nothing brings the wait back to its first length: shorter than the 1.6 s
      // it would be at without the reset.
      await handle.signal(wakeSignal);
      await eventually(() => lookedAt.length === 7, { what: 'the woken look and the one after it' });
      expect(lookedAt[6]! - lookedAt[5]!).toBeLessThan(1_600);

      // An approval whose wake is lost: the next idle look finds it and the release proceeds.
      release.facts.approvals.push({
        userId: 'u1',
        userName: 'Ada',
        status: 'approved',
        reason: null,
        at: new Date().toISOString(),
      });
      await eventually(() => release.evaluations.at(-1)?.decision === 'proceed', {
        what: 'the approval found without a wake',
        timeoutMs: 5_000,
      });
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.evaluations.map((e) => e.decision)).toEqual(['wait', 'proceed']);
  });

  it('retries a failed job after the backoff, and fails once the retries are used', async () => {
    const release = new FakeRelease(randomUUID());
    release.rules = [{ id: 'retry', retry: { maxRetries: 1, backoffSeconds: 1, backoffStrategy: 'linear' } }];
    const dispatchedAt: number[] = [];
    release.dispatchAnswer = () => {
      dispatchedAt.push(Date.now());
      return { kind: 'ended', status: 'failure' };
    };
    const outcome = await withRelease(release, async (taskQueue) =>
      (await startRelease(taskQueue, release, 'release-failed-after-retry')).result(),
    );
    expect(release.jobs.map((job) => [job.attempt, job.status])).toEqual([
      [1, 'failure'],
      [2, 'failure'],
    ]);
    expect(dispatchedAt[1]! - dispatchedAt[0]!).toBeGreaterThanOrEqual(1_000);
    expect(outcome).toEqual({
      phase: 'failed',
      reason: `job ${release.jobs[1]!.id} ended failure; 1 of 1 retries used`,
    });
  });

  it('succeeds once the verification on success passes', async () => {
    const release = new FakeRelease(randomUUID());
    release.verificationRules = [{ trigger: 'jobSuccess', metrics: [httpMetric()] }];
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-verification-passed');
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.calls.filter((name) => name === 'measureHttpMetric')).toHaveLength(2);
    expect(release.verifications[0]).toMatchObject({ status: 'passed', message: 'every metric passed' });
  });

  it('fails when a metric fails, and says why when its probe fails for good', async () => {
    const failing = new FakeRelease(randomUUID());
    failing.verificationRules = [{ trigger: 'jobSuccess', metrics: [httpMetric({ count: 1 })] }];
    failing.measureAnswer = () => ({ passed: false });
    const broken = new FakeRelease(randomUUID());
    broken.verificationRules = [
      {
        trigger: 'jobSuccess',
        metrics: [httpMetric({ count: 1 }), httpMetric({ name: 'latency', count: 1 })],
      },
    ];
    broken.measureAnswer = (_id, index) => {
      if (index === 1) throw new Error('connection refused');
      return { passed: true };
    };
    for (const release of [failing, broken]) {
      await withRelease(release, async (taskQueue) => {
        const handle = await startRelease(
          taskQueue,
          release,
          `release-verification-${release === failing ? 'failed' : 'probe-failed'}`,
        );
        await release.report(handle, 'successful');
        expect(await handle.result()).toEqual({
          phase: 'failed',
          reason: `verification ${release.verifications[0]!.id} failed; no retry rule: one job per release`,
        });
      });
    }
    expect(failing.verifications[0]).toMatchObject({ status: 'failed', message: 'failed: health' });
    expect(broken.verifications[0]).toMatchObject({
      status: 'failed',
      message: 'failed: latency (probe failed: connection refused)',
    });
  });

  it('ends when cancelled mid-run, with a last look at the pushed job', async () => {
    const release = new FakeRelease(randomUUID());
    release.agentType = 'github-app';
    release.dispatchAnswer = () => ({ kind: 'triggered' });
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-cancelled');
      await eventually(() => release.jobs[0]?.status === 'triggered', { what: 'the pushed job' });
      release.phase = 'cancelled';
      release.setJobStatus('cancelled');
      await handle.signal(wakeSignal);
      expect(await handle.result()).toEqual({ phase: 'cancelled' });
    });
    expect(release.calls.slice(-2)).toEqual(['releaseProgress', 'followJob']);
  });

  it('runs again when a redeploy arrives while it ends', async () => {
    const release = new FakeRelease(randomUUID());
    const activities = release.activities();
    let handle: WorkflowHandle<typeof releaseWorkflow> | undefined;
    const finishRelease: typeof activities.finishRelease = async (...args) => {
      await activities.finishRelease(...args);
      if (release.attempt === 1) {
        release.phase = 'pending';
        release.redeployRequested = true;
        await handle!.signal(wakeSignal);
      }
    };
    await withWorker(env, { ...activities, finishRelease }, async (taskQueue) => {
      handle = await startRelease(taskQueue, release, 'release-redeployed');
      await release.report(handle, 'successful');
      // The wake lands while the workflow task that ends the release runs: the SDK retries that task with it (slow, seconds).
      await eventually(() => release.jobs.length === 2, { timeoutMs: 40_000, what: 'the redeployed job' });
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.jobs.map((job) => [job.attempt, job.status])).toEqual([
      [1, 'successful'],
      [2, 'successful'],
    ]);
  });

  it('continues as new with a job in flight, and the next run finishes it', async () => {
    const release = new FakeRelease(randomUUID());
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-continued-as-new', { historyLimit: 20 });
      await eventually(() => release.jobs[0]?.status === 'queued', { what: 'a queued job' });
      const firstRunId = (await handle.describe()).runId;
      // Each wake adds a workflow task and a look to the history.
      await eventually(
        async () => {
          await handle.signal(wakeSignal);
          return (await handle.describe()).runId !== firstRunId;
        },
        { what: 'a continued run' },
      );
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.calls.filter((name) => name === 'dispatchJob')).toHaveLength(1);
  });

  it('ends superseded when a newer version has its own release', async () => {
    const now = new Date();
    const release = new FakeRelease(randomUUID());
    release.facts.activeReleaseId = 'older';
    const outcome = await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-superseded');
      await eventually(() => release.evaluations.length === 1, { what: 'the first evaluation' });
      release.facts.newerReleases = [
        {
          id: 'newer',
          rejected: false,
          version: { ...release.facts.version, id: 'v2', tag: '2.0.0', createdAt: now.toISOString() },
        },
      ];
      await handle.signal(wakeSignal);
      return handle.result();
    });
    expect(outcome).toEqual({ phase: 'superseded', reason: 'superseded by version 2.0.0 (release newer)' });
    expect(release.evaluations[0]!.reason).toBe('the target is busy with release older');
    expect(release.jobs).toHaveLength(0);
  });

  it('starts an admitted release at its jobs, without reading its gates', async () => {
    const release = new FakeRelease(randomUUID());
    release.phase = 'running';
    release.jobs.push({ id: `${release.id}-job-1`, status: 'queued', attempt: 1, agentType: 'http-pull' });
    const evaluation = evaluateGates(release.facts, new Date());
    await withRelease(release, async (taskQueue) => {
      const handle = await startRelease(taskQueue, release, 'release-admitted', {
        admitted: {
          evaluation,
          attempt: 1,
          jobs: [{ id: release.jobs[0]!.id, status: 'queued', agentType: 'http-pull' }],
        },
      });
      expect(await handle.query('releaseState')).toMatchObject({ phase: 'running', attempt: 1 });
      await release.report(handle, 'successful');
      expect((await handle.result()).phase).toBe('succeeded');
    });
    expect(release.calls).not.toContain('loadReleaseFacts');
    expect(release.calls).not.toContain('dispatchJob');
  });
});
