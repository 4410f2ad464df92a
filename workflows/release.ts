import {
  condition,
  continueAsNew,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ReleaseProgress } from '../activities/release';
import type { ReleaseAdmission } from '../domain/orchestration';
import { decideRetry, evaluateGates, type GateEvaluation } from '../domain/gates';
import { isPushAgent } from '../domain/jobAgentTypes';
import { isTerminalJobStatus, type JobStatus } from '../domain/jobStatus';
import type { VerificationMetric } from '../domain/policies';
import { isTerminalReleasePhase, type ReleasePhase } from '../domain/releases';
import { HEARTBEAT_TIMEOUT, releaseStateQuery, wakeSignal, type ReleaseView } from './definitions';
import { searchAttributes } from './searchAttributes';
import type { z } from 'zod';

/**
 * The release's database steps are short and idempotent: local activities, run by the worker that
 * runs the workflow and recorded in its history as markers, without a round trip to the server
 * each. Steps that reach other systems (dispatch to an agent, an HTTP probe) are ordinary
 * activities, each visible as such in the history.
 */
const steps = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

const agents = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const probes = proxyActivities<Activities>({
  // An HTTP probe has its own timeout (at most 300 s); a retry only covers a lost worker.
  startToCloseTimeout: '6 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5 },
});

/**
 * Even without a signal, a waiting release looks again: a lost wake never strands it. Wakes travel
 * through the durable outbox, so this is only a safety net: it starts at 10 minutes and doubles,
 * up to 6 hours, while nothing happens, so thousands of idle releases cost little.
 */
const FIRST_IDLE_WAIT_MS = 10 * 60_000;
/**
 * A pushed job's remote run is looked at after 5 s, then less and less often while nothing
 * changes, up to every minute; a webhook makes the looks a fallback.
 */
const FIRST_FOLLOW_MS = 5_000;
const LONGEST_FOLLOW_MS = 60_000;
const LONGEST_IDLE_WAIT_MS = 6 * 60 * 60_000;
const HISTORY_LIMIT = 2_000;

export interface ReleaseWorkflowInput {
  releaseId: string;
  /** The fan-out decided the gates and created the first jobs with the release (first run only). */
  admitted?: ReleaseAdmission;
}

export interface ReleaseOutcome {
  phase: ReleasePhase | 'gone';
  reason?: string;
}

type Metric = z.infer<typeof VerificationMetric>;

/** What a job's status means for verifications that start on that trigger. */
function triggered(trigger: string, status: JobStatus): boolean {
  switch (trigger) {
    case 'jobCreated':
      return true;
    case 'jobStarted':
      return status !== 'pending' && status !== 'queued';
    case 'jobSuccess':
      return status === 'successful';
    case 'jobFailure':
      return isTerminalJobStatus(status) && status !== 'successful';
    default:
      return false;
  }
}

/** Each attempt's outcome, for the retry rule: its first failed job's status, `failure` for a failed verification. */
function attemptOutcomes(progress: ReleaseProgress): { status: JobStatus }[] {
  return Array.from({ length: progress.attempt }, (_, i) => {
    const jobs = progress.jobs.filter((job) => job.attempt === i + 1);
    const failed = jobs.find((job) => job.status !== 'successful');
    if (failed) return { status: failed.status };
    const jobIds = new Set(jobs.map((job) => job.id));
    const verificationFailed = progress.verifications.some(
      (v) => jobIds.has(v.jobId) && v.status === 'failed',
    );
    return { status: verificationFailed ? 'failure' : 'successful' };
  });
}

function sameEvaluation(a: GateEvaluation | null, b: GateEvaluation): boolean {
  return (
    !!a && a.decision === b.decision && a.reason === b.reason && a.nextEvaluationAt === b.nextEvaluationAt
  );
}

/**
 * `release/<releaseId>`: one release from creation to its end (SPEC "Flow" steps 3–7).
 *
 * 1. Gates: read the facts, evaluate every policy rule (domain/gates.ts), and either start the jobs,
 *    wait (for a wake signal, or on a durable timer until a window opens or soak time ends), or end
 *    (superseded by a newer version, or withdrawn).
 * 2. Jobs: dispatch each through its agent type, wait for their statuses (agents report them; each
 *    report wakes this workflow), run verifications on durable timers, retry failures as the retry
 *    rule allows, and end the release: a success becomes the target's current release.
 *
 * The database is the truth; this workflow only decides. Every wake means "look again", so lost or
 * repeated signals are harmless, and history stays bounded by continuing as new.
 */
export async function releaseWorkflow(input: ReleaseWorkflowInput): Promise<ReleaseOutcome> {
  const { releaseId } = input;
  let admitted = input.admitted;
  let woken = false;
  const view: ReleaseView = {
    releaseId,
    phase: admitted ? 'running' : 'unknown',
    evaluation: admitted?.evaluation ?? null,
    attempt: admitted?.attempt ?? 0,
    // Set as a search attribute when the workflow was started.
    jobIds: admitted?.jobs.map((job) => job.id) ?? [],
  };
  setHandler(wakeSignal, () => {
    woken = true;
  });
  setHandler(releaseStateQuery, () => view);

  let idleWaitMs = FIRST_IDLE_WAIT_MS;
  const wait = async (until?: string) => {
    // Spread by up to half: thousands of releases created together do not all look again together.
    const idle = idleWaitMs + Math.floor(Math.random() * (idleWaitMs / 2));
    const ms = until ? Math.min(Math.max(0, Date.parse(until) - Date.now()), idle) : idle;
    const wokenUp = await condition(() => woken, ms);
    idleWaitMs = wokenUp ? FIRST_IDLE_WAIT_MS : Math.min(idleWaitMs * 2, LONGEST_IDLE_WAIT_MS);
  };
  const end = async (
    phase: 'succeeded' | 'failed' | 'cancelled' | 'superseded',
    reason: string,
  ): Promise<ReleaseOutcome> => {
    await steps.finishRelease(releaseId, phase, reason);
    view.phase = phase;
    return { phase, reason };
  };

  /** Gates, then jobs: one pass over the release until it ends. */
  const run = async (): Promise<ReleaseOutcome> => {
    // 1. Gates, unless the fan-out passed them and created the jobs with the release.
    let attempt = admitted?.attempt ?? 0;
    while (!admitted) {
      woken = false;
      const loaded = await steps.loadReleaseFacts(releaseId);
      if (!loaded) return { phase: 'gone' };
      view.phase = loaded.phase;
      attempt = loaded.lastAttempt;
      if (isTerminalReleasePhase(loaded.phase)) return { phase: loaded.phase };
      if (loaded.phase === 'running') break;
      // A redeploy skips the policies, but still needs the version, the target and a free slot.
      const facts = loaded.redeployRequested
        ? {
            ...loaded.facts,
            policies: [],
            newerReleases: [],
            deployedVersionId: null,
            deployedVersionCreatedAt: null,
          }
        : loaded.facts;
      const evaluation = evaluateGates(facts, new Date());
      if (!sameEvaluation(view.evaluation, evaluation)) await steps.recordEvaluation(releaseId, evaluation);
      view.evaluation = evaluation;
      if (evaluation.decision === 'superseded') return end('superseded', evaluation.reason);
      if (evaluation.decision === 'withdrawn') return end('cancelled', evaluation.reason);
      if (evaluation.decision === 'proceed') {
        const started = await steps.startJobs(releaseId, attempt + 1);
        if (started.outcome === 'started') break;
        if (started.outcome === 'finished') continue;
      }
      await wait(evaluation.nextEvaluationAt);
      if (workflowInfo().historyLength > HISTORY_LIMIT)
        await continueAsNew<typeof releaseWorkflow>({ releaseId });
    }
    admitted = undefined;

    // 2. Jobs.
    const dispatched = new Set<string>();
    const verifying = new Set<string>();
    const background = new Set<Promise<void>>();
    const inBackground = (work: Promise<unknown>) => {
      const task: Promise<void> = work.then(
        () => undefined,
        () => undefined,
      );
      background.add(task);
      void task.then(() => {
        background.delete(task);
        woken = true;
      });
    };

    // Following a pushed job is not background work that must finish before continue-as-new: the
    // next run resumes it from the database. `following` holds the loops still running.
    const followed = new Set<string>();
    const following = new Set<string>();
    const follow = async (jobId: string) => {
      let delayMs = FIRST_FOLLOW_MS;
      for (;;) {
        await sleep(delayMs);
        const look = await agents.followJob(jobId);
        if (look.changed) woken = true;
        if (look.done) return;
        delayMs = look.changed ? FIRST_FOLLOW_MS : Math.min(delayMs * 2, LONGEST_FOLLOW_MS);
      }
    };
    const startFollowing = (jobId: string) => {
      if (followed.has(jobId)) return;
      followed.add(jobId);
      following.add(jobId);
      void follow(jobId)
        .catch(() => undefined)
        .then(() => {
          following.delete(jobId);
          woken = true;
        });
    };

    const measure = async (verificationId: string, index: number, metric: Metric): Promise<boolean> => {
      let run = 0;
      let best = 0;
      let failuresInARow = 0;
      for (let n = 0; n < metric.count; n++) {
        let passed: boolean;
        if (metric.provider.type === 'sleep') {
          await sleep(metric.provider.durationSeconds * 1000);
          passed = (await steps.recordSleepMeasurement(verificationId, metric.name)).passed;
        } else {
          passed = (await probes.measureHttpMetric(verificationId, index)).passed;
        }
        run = passed ? run + 1 : 0;
        best = Math.max(best, run);
        failuresInARow = passed ? 0 : failuresInARow + 1;
        if (metric.failureThreshold > 0 && failuresInARow >= metric.failureThreshold) return false;
        if (n < metric.count - 1) await sleep(metric.intervalSeconds * 1000);
      }
      return best >= (metric.successThreshold ?? metric.count);
    };

    const verify = async (verification: ReleaseProgress['verifications'][number]) => {
      const results = await Promise.all(
        verification.metrics.map((metric, index) => measure(verification.id, index, metric)),
      );
      const failed = verification.metrics.filter((_, index) => !results[index]).map((metric) => metric.name);
      await steps.settleVerification(
        verification.id,
        failed.length === 0,
        failed.length === 0 ? 'every metric passed' : `failed: ${failed.join(', ')}`,
      );
    };

    for (;;) {
      woken = false;
      const progress = await steps.releaseProgress(releaseId);
      if (!progress) return { phase: 'gone' };
      view.phase = progress.phase;
      if (isTerminalReleasePhase(progress.phase)) {
        // Ended from outside (a cancel): one last look at each pushed job cancels its remote run.
        await Promise.all([...following].map((jobId) => agents.followJob(jobId)));
        return { phase: progress.phase };
      }
      attempt = progress.attempt;
      view.attempt = attempt;
      const ids = progress.jobs.map((job) => job.id);
      if (ids.length !== view.jobIds.length) {
        view.jobIds = ids;
        upsertSearchAttributes([{ key: searchAttributes.jobIds, value: ids }]);
      }

      const current = progress.jobs.filter((job) => job.attempt === attempt);
      for (const job of current) {
        // A pushed job that an earlier run of this workflow dispatched is followed by this one.
        if (isPushAgent(job.agentType) && job.status !== 'pending' && !isTerminalJobStatus(job.status)) {
          startFollowing(job.id);
        }
        if (job.status !== 'pending' || dispatched.has(job.id)) continue;
        dispatched.add(job.id);
        let result = await agents.dispatchJob(job.id);
        while (result.kind === 'next') result = await agents.dispatchJob(job.id, result.step);
        if (result.kind === 'triggered') startFollowing(job.id);
        if (result.kind === 'scheduled') {
          inBackground(
            sleep(result.afterSeconds * 1000).then(() =>
              steps.completeJob(job.id, result.status, result.message),
            ),
          );
        }
      }
      const statusOf = new Map(current.map((job) => [job.id, job.status]));
      const verifications = progress.verifications.filter((v) => statusOf.has(v.jobId));
      for (const verification of verifications) {
        const status = statusOf.get(verification.jobId)!;
        if (
          verification.status !== 'pending' ||
          verifying.has(verification.id) ||
          !triggered(verification.trigger, status)
        )
          continue;
        verifying.add(verification.id);
        inBackground(verify(verification));
      }

      if (current.length > 0 && current.every((job) => isTerminalJobStatus(job.status))) {
        const gating = verifications.filter((v) => v.trigger !== 'jobFailure');
        const failedJob = current.find((job) => job.status !== 'successful');
        const failedVerification = gating.find((v) => v.status === 'failed');
        if (!failedJob && gating.every((v) => v.status === 'passed')) {
          return end('succeeded', 'every job succeeded and verified');
        }
        if (failedJob || failedVerification) {
          const retry = decideRetry(await steps.releaseRules(releaseId), attemptOutcomes(progress));
          const what = failedJob
            ? `job ${failedJob.id} ended ${failedJob.status}`
            : `verification ${failedVerification!.id} failed`;
          if (!retry.retry) return end('failed', `${what}; ${retry.reason}`);
          await sleep(retry.backoffMs);
          await steps.startJobs(releaseId, attempt + 1);
          continue;
        }
      }
      await wait();
      if (background.size === 0 && workflowInfo().historyLength > HISTORY_LIMIT) {
        await continueAsNew<typeof releaseWorkflow>({ releaseId });
      }
    }
  };

  // A wake that arrives while the release is ending may be a redeploy, which reopens it: look once
  // more, and run again if it is no longer finished.
  let outcome = await run();
  for (;;) {
    if (!woken) return outcome;
    woken = false;
    const loaded = await steps.loadReleaseFacts(releaseId);
    if (loaded && !isTerminalReleasePhase(loaded.phase)) outcome = await run();
  }
}
