import {
  ActivityFailure,
  condition,
  continueAsNew,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { evaluateGates } from '../domain/gates';
import { decideRetry } from '../domain/retry';
import type { ReleaseAdmission } from '../domain/orchestration';
import {
  attemptActions,
  attemptOutcomes,
  MetricScore,
  nextIdleWait,
  historyIsFull,
  redeployFacts,
  sameEvaluation,
  verificationResult,
  type Metric,
  type VerificationProgress,
} from '../domain/releaseProgress';
import { ruleTimerMs } from '../domain/ruleLimits';
import { isTerminalReleasePhase, type ReleasePhase } from '../domain/releases';
import { HEARTBEAT_TIMEOUT, type ReleaseView } from './definitions';
import { JobDriver } from './jobDriver';
import { searchAttributes } from './searchAttributes';
import { databaseSteps } from './steps';

/**
 * The release's database steps are local activities (workflows/steps.ts); steps that reach other
 * systems (dispatch to an agent, an HTTP probe) are ordinary activities, each visible as such in
 * the history.
 */
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
const LONGEST_IDLE_WAIT_MS = 6 * 60 * 60_000;
/** History events before a run continues as new. */
const HISTORY_LIMIT = 2_000;

export interface ReleaseWorkflowInput {
  releaseId: string;
  /** The fan-out decided the gates and created the first jobs with the release (first run only). */
  admitted?: ReleaseAdmission;
  /** Events before continuing as new (default 2,000); kept across runs. */
  historyLimit?: number;
  /**
   * The idle safety net's first and longest waits (default 10 minutes and 6 hours); kept across runs.
   * Workflow tests shorten them to watch a lost wake and the back-off: the dev server they run on
   * cannot skip time.
   */
  idleWaits?: IdleWaits;
}

export interface IdleWaits {
  firstMs: number;
  longestMs: number;
}

const DEFAULT_IDLE_WAITS: IdleWaits = { firstMs: FIRST_IDLE_WAIT_MS, longestMs: LONGEST_IDLE_WAIT_MS };

export interface ReleaseOutcome {
  phase: ReleasePhase | 'gone';
  reason?: string;
}

/**
 * One release's run, from its gates to its end: the state the workflow's handlers share and the
 * steps of its loop. Every look reads the database and asks domain/releaseProgress.ts what to do.
 */
export class ReleaseRun {
  readonly view: ReleaseView;
  private woken = false;
  private readonly idleWaits: IdleWaits;
  private idleWaitMs: number;
  private admitted: ReleaseAdmission | undefined;
  /** Dispatches and follows the jobs; also runs the verifications in the background. */
  private readonly jobs = new JobDriver(() => this.wake());

  constructor(private readonly input: ReleaseWorkflowInput) {
    this.admitted = input.admitted;
    this.idleWaits = input.idleWaits ?? DEFAULT_IDLE_WAITS;
    this.idleWaitMs = this.idleWaits.firstMs;
    this.view = {
      releaseId: input.releaseId,
      phase: this.admitted ? 'running' : 'unknown',
      evaluation: this.admitted?.evaluation ?? null,
      attempt: this.admitted?.attempt ?? 0,
      // Set as a search attribute when the workflow was started.
      jobIds: this.admitted?.jobs.map((job) => job.id) ?? [],
    };
  }

  /** "Look again": something the release depends on changed. */
  wake(): void {
    this.woken = true;
  }

  /**
   * Runs the release to its end. A wake that arrives while it ends may be a redeploy, which reopens
   * it: it looks once more, and runs again if the release is no longer finished.
   */
  async run(): Promise<ReleaseOutcome> {
    let outcome = await this.runOnce();
    while (this.woken) {
      this.woken = false;
      const loaded = await databaseSteps.loadReleaseFacts(this.input.releaseId);
      if (loaded && !isTerminalReleasePhase(loaded.phase)) outcome = await this.runOnce();
    }
    return outcome;
  }

  private async runOnce(): Promise<ReleaseOutcome> {
    const gated = this.admitted ? 'running' : await this.passGates();
    this.admitted = undefined;
    return gated === 'running' ? this.runJobs() : gated;
  }

  /** Evaluates the gates until they let the release start its jobs, or end it. */
  private async passGates(): Promise<ReleaseOutcome | 'running'> {
    const { releaseId } = this.input;
    for (;;) {
      this.woken = false;
      const loaded = await databaseSteps.loadReleaseFacts(releaseId);
      if (!loaded) return { phase: 'gone' };
      this.view.phase = loaded.phase;
      if (isTerminalReleasePhase(loaded.phase)) return { phase: loaded.phase };
      if (loaded.phase === 'running') return 'running';
      const facts = loaded.redeployRequested
        ? redeployFacts(loaded.facts, loaded.redeployOverridesPolicies ?? true)
        : loaded.facts;
      const evaluation = evaluateGates(facts, new Date());
      if (!sameEvaluation(this.view.evaluation, evaluation))
        await databaseSteps.recordEvaluation(releaseId, evaluation);
      this.view.evaluation = evaluation;
      if (evaluation.decision === 'superseded') return this.end('superseded', evaluation.reason);
      if (evaluation.decision === 'withdrawn') return this.end('cancelled', evaluation.reason);
      if (evaluation.decision === 'proceed') {
        const started = await databaseSteps.startJobs(releaseId, loaded.lastAttempt + 1);
        if (started.outcome === 'started') return 'running';
        if (started.outcome === 'finished') continue;
      }
      await this.wait(evaluation.nextEvaluationAt);
      if (this.historyFull()) await this.continueAsNew();
    }
  }

  /** Dispatches, follows and verifies the jobs of each attempt until the release ends. */
  private async runJobs(): Promise<ReleaseOutcome> {
    const { releaseId } = this.input;
    for (;;) {
      this.woken = false;
      const progress = await databaseSteps.releaseProgress(releaseId);
      if (!progress) return { phase: 'gone' };
      this.view.phase = progress.phase;
      if (isTerminalReleasePhase(progress.phase)) {
        await this.jobs.lastLooks();
        return { phase: progress.phase };
      }
      this.view.attempt = progress.attempt;
      const ids = progress.jobs.map((job) => job.id);
      if (ids.length !== this.view.jobIds.length) {
        this.view.jobIds = ids;
        upsertSearchAttributes([{ key: searchAttributes.jobIds, value: ids }]);
      }

      const actions = attemptActions(progress, this.jobs.handled);
      // A pushed job that an earlier run of this workflow dispatched is followed by this one.
      for (const jobId of actions.follow) this.jobs.startFollowing(jobId);
      for (const jobId of actions.dispatch) await this.jobs.dispatch(jobId);
      for (const verification of actions.verify) {
        this.jobs.handled.add(verification.id);
        this.jobs.inBackground(this.verify(verification));
      }

      if (actions.verdict.kind === 'succeeded') return this.end('succeeded', actions.verdict.reason);
      if (actions.verdict.kind === 'failed') {
        const retry = decideRetry(await databaseSteps.releaseRules(releaseId), attemptOutcomes(progress));
        if (!retry.retry) return this.end('failed', `${actions.verdict.reason}; ${retry.reason}`);
        await sleep(retry.backoffMs);
        await databaseSteps.startJobs(releaseId, progress.attempt + 1);
        continue;
      }
      await this.wait();
      if (this.jobs.background.size === 0 && this.historyFull()) await this.continueAsNew();
    }
  }

  private async verify(verification: VerificationProgress): Promise<void> {
    const results = await Promise.all(
      verification.metrics.map(async (metric, index) => ({
        name: metric.name,
        ...(await this.measure(verification.id, index, metric)),
      })),
    );
    const { passed, message } = verificationResult(results);
    await databaseSteps.settleVerification(verification.id, passed, message);
  }

  /** Takes a metric's measurements on its interval until its score is known; a probe that fails for good fails it. */
  private async measure(
    verificationId: string,
    index: number,
    metric: Metric,
  ): Promise<{ passed: boolean; failure?: string }> {
    const score = new MetricScore(metric);
    for (;;) {
      let passed: boolean;
      if (metric.provider.type === 'sleep') {
        await sleep(ruleTimerMs(metric.provider.durationSeconds));
        passed = (await databaseSteps.recordSleepMeasurement(verificationId, metric.name)).passed;
      } else {
        try {
          passed = (await probes.measureHttpMetric(verificationId, index)).passed;
        } catch (error) {
          if (!(error instanceof ActivityFailure)) throw error;
          return { passed: false, failure: `probe failed: ${error.cause?.message ?? error.message}` };
        }
      }
      const state = score.record(passed);
      if (state !== 'measuring') return { passed: state === 'passed' };
      await sleep(ruleTimerMs(metric.intervalSeconds));
    }
  }

  /** Waits for a wake, or until `until`, or for the idle safety net. */
  private async wait(until?: string): Promise<void> {
    // Spread by up to half: thousands of releases created together do not all look again together.
    const idle = this.idleWaitMs + Math.floor(Math.random() * (this.idleWaitMs / 2));
    const ms = until ? Math.min(Math.max(0, Date.parse(until) - Date.now()), idle) : idle;
    const wokenUp = await condition(() => this.woken, ms);
    this.idleWaitMs = nextIdleWait(
      this.idleWaitMs,
      wokenUp,
      this.idleWaits.firstMs,
      this.idleWaits.longestMs,
    );
  }

  private historyFull(): boolean {
    return historyIsFull(workflowInfo(), this.input.historyLimit ?? HISTORY_LIMIT);
  }

  /** A fresh run with the same release: it reads where things stand and resumes from there. */
  private continueAsNew(): Promise<never> {
    const { releaseId, historyLimit, idleWaits } = this.input;
    return continueAsNew<(input: ReleaseWorkflowInput) => Promise<ReleaseOutcome>>({
      releaseId,
      historyLimit,
      idleWaits,
    });
  }

  private async end(
    phase: 'succeeded' | 'failed' | 'cancelled' | 'superseded',
    reason: string,
  ): Promise<ReleaseOutcome> {
    await databaseSteps.finishRelease(this.input.releaseId, phase, reason);
    this.view.phase = phase;
    return { phase, reason };
  }
}
