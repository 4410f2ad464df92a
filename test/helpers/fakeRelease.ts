import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../activities';
import type { FinalPhase } from '../../engine/executor';
import type {
  DispatchResult,
  DispatchStep,
  FollowResult,
  LoadedRelease,
  MeasurementResult,
  StartJobsResult,
} from '../../domain/activityResults';
import type { GateEvaluation, ReleaseFacts } from '../../domain/gates';
import type { JobAgentType } from '../../domain/jobAgentTypes';
import type { JobStatus } from '../../domain/jobStatus';
import type { PolicyRule } from '../../domain/policies';
import type { Metric, ReleaseProgress, VerificationProgress } from '../../domain/releaseProgress';
import type { ReleasePhase } from '../../domain/releases';
import { wakeSignal } from '../../workflows/definitions';
import { eventually } from './eventually';
import { releaseFacts } from './releaseFacts';

type ReleaseActivityName =
  | 'loadReleaseFacts'
  | 'recordEvaluation'
  | 'startJobs'
  | 'dispatchJob'
  | 'followJob'
  | 'completeJob'
  | 'releaseProgress'
  | 'releaseRules'
  | 'measureHttpMetric'
  | 'recordSleepMeasurement'
  | 'settleVerification'
  | 'finishRelease';

/**
 * One release, its jobs and its verifications held in memory, with the release workflow's
 * activities working on them: workflow tests run the real workflow code against it and change it
 * as the outside world would (an agent's report, an approval), then wake the workflow.
 */
export class FakeRelease {
  phase: ReleasePhase = 'pending';
  facts: ReleaseFacts;
  redeployRequested = false;
  rules: PolicyRule[] = [];
  jobs: (ReleaseProgress['jobs'][number] & { message?: string | null })[] = [];
  verifications: (VerificationProgress & { message?: string })[] = [];
  /** Verification rules: each started job gets one verification per entry. */
  verificationRules: { trigger: string; metrics: Metric[] }[] = [];
  agentType: JobAgentType = 'http-pull';
  /** What dispatching a job answers (a pull agent's queue unless changed). */
  dispatchAnswer: (jobId: string, step?: DispatchStep) => DispatchResult = () => ({ kind: 'queued' });
  followAnswer: (jobId: string) => FollowResult = () => ({ done: false });
  /** One measurement of an HTTP metric; throw to fail the probe. */
  measureAnswer: (verificationId: string, metricIndex: number) => MeasurementResult = () => ({
    passed: true,
  });
  readonly evaluations: GateEvaluation[] = [];
  /** Every activity call, by name, in order. */
  readonly calls: string[] = [];
  finished: { phase: FinalPhase; reason: string } | null = null;

  constructor(
    readonly id: string,
    now = new Date(),
  ) {
    this.facts = releaseFacts(now, { release: { id, environmentId: 'e1', createdAt: now.toISOString() } });
  }

  /** An agent reports the current attempt's job once it is queued, and the release is woken, as the API's report would. */
  async report(handle: WorkflowHandle, status: 'successful' | 'failure'): Promise<void> {
    await eventually(() => this.jobs.at(-1)?.status === 'queued', {
      what: `a queued job of release ${this.id}`,
    });
    this.setJobStatus(status);
    await handle.signal(wakeSignal);
  }

  /** A job of the current attempt moves (as an agent's report would move it). */
  setJobStatus(status: JobStatus, attempt = this.attempt): void {
    for (const job of this.jobs) if (job.attempt === attempt) job.status = status;
  }

  get attempt(): number {
    return Math.max(0, ...this.jobs.map((job) => job.attempt));
  }

  activities(): Pick<Activities, ReleaseActivityName> {
    const call = (name: ReleaseActivityName) => this.calls.push(name);
    return {
      loadReleaseFacts: async (): Promise<LoadedRelease | null> => {
        call('loadReleaseFacts');
        return {
          releaseId: this.id,
          workspaceId: 'w1',
          phase: this.phase,
          redeployRequested: this.redeployRequested,
          lastAttempt: this.attempt,
          facts: this.facts,
        };
      },
      recordEvaluation: async (_releaseId: string, evaluation: GateEvaluation) => {
        call('recordEvaluation');
        this.evaluations.push(evaluation);
      },
      startJobs: async (_releaseId: string, attempt: number): Promise<StartJobsResult> => {
        call('startJobs');
        if (this.facts.activeReleaseId) return { outcome: 'busy', holder: this.facts.activeReleaseId };
        if (!this.jobs.some((job) => job.attempt === attempt)) {
          const id = `${this.id}-job-${attempt}`;
          this.jobs.push({ id, status: 'pending', attempt, agentType: this.agentType });
          this.verificationRules.forEach((rule, i) =>
            this.verifications.push({ id: `${id}-verification-${i}`, jobId: id, status: 'pending', ...rule }),
          );
        }
        this.phase = 'running';
        this.redeployRequested = false;
        const jobs = this.jobs.filter((job) => job.attempt === attempt);
        return { outcome: 'started', attempt, jobs };
      },
      dispatchJob: async (jobId: string, step?: DispatchStep) => {
        call('dispatchJob');
        const result = this.dispatchAnswer(jobId, step);
        const job = this.jobs.find((j) => j.id === jobId)!;
        if (result.kind === 'queued') job.status = 'queued';
        if (result.kind === 'triggered') job.status = 'triggered';
        if (result.kind === 'ended') job.status = result.status;
        return result;
      },
      followJob: async (jobId: string) => {
        call('followJob');
        return this.followAnswer(jobId);
      },
      completeJob: async (jobId: string, status: JobStatus, message: string | null) => {
        call('completeJob');
        const job = this.jobs.find((j) => j.id === jobId)!;
        job.status = status;
        job.message = message;
      },
      releaseProgress: async (): Promise<ReleaseProgress | null> => {
        call('releaseProgress');
        return {
          phase: this.phase,
          attempt: this.attempt,
          jobs: this.jobs.map(({ id, status, attempt, agentType }) => ({ id, status, attempt, agentType })),
          verifications: this.verifications.map(({ id, jobId, trigger, status, metrics }) => ({
            id,
            jobId,
            trigger,
            status,
            metrics,
          })),
        };
      },
      releaseRules: async () => {
        call('releaseRules');
        return this.rules;
      },
      measureHttpMetric: async (verificationId: string, metricIndex: number) => {
        call('measureHttpMetric');
        try {
          return this.measureAnswer(verificationId, metricIndex);
        } catch (error) {
          throw ApplicationFailure.create({ message: (error as Error).message, nonRetryable: true });
        }
      },
      recordSleepMeasurement: async () => {
        call('recordSleepMeasurement');
        return { passed: true };
      },
      settleVerification: async (verificationId: string, passed: boolean, message: string) => {
        call('settleVerification');
        const verification = this.verifications.find((v) => v.id === verificationId)!;
        verification.status = passed ? 'passed' : 'failed';
        verification.message = message;
      },
      finishRelease: async (_releaseId: string, phase: FinalPhase, reason: string) => {
        call('finishRelease');
        this.phase = phase;
        this.finished = { phase, reason };
      },
    };
  }
}

/**
 * The release activities of several fake releases on one worker: each call goes to the release
 * its first argument names (a release id, or a job or verification id, which start with one).
 */
export function activitiesOf(releases: FakeRelease[]): ReturnType<FakeRelease['activities']> {
  const byRelease = releases.map((release) => ({ id: release.id, activities: release.activities() }));
  const route = (id: string) => {
    const owner = byRelease.find((candidate) => id.startsWith(candidate.id));
    if (!owner) throw new Error(`no fake release owns ${id}`);
    return owner.activities;
  };
  const names = Object.keys(byRelease[0]!.activities) as ReleaseActivityName[];
  return Object.fromEntries(
    names.map((name) => [
      name,
      (id: string, ...rest: unknown[]) => (route(id)[name] as (...args: unknown[]) => unknown)(id, ...rest),
    ]),
  ) as ReturnType<FakeRelease['activities']>;
}
