import type { z } from 'zod';
import type { GateEvaluation, ReleaseFacts } from './gates';
import { isPushAgent } from './jobAgentTypes';
import { isTerminalJobStatus, type JobStatus } from './jobStatus';
import type { JobRef } from './orchestration';
import type { VerificationMetric } from './policies';
import { RULE_DEFAULTS } from './ruleDefaults';
import type { ReleasePhase } from './releases';

/**
 * The rules a release workflow applies to where its jobs and verifications stand. Pure: the
 * workflow reads the facts through activities and asks these what to do next.
 */

export type Metric = z.infer<typeof VerificationMetric>;

export interface VerificationProgress {
  id: string;
  jobId: string;
  trigger: string;
  status: string;
  metrics: Metric[];
}

/** Where a release's jobs and verifications stand: what a woken release reads first. */
export interface ReleaseProgress {
  phase: ReleasePhase;
  attempt: number;
  jobs: (JobRef & { attempt: number })[];
  verifications: VerificationProgress[];
}

/**
 * The facts a redeploy is decided on: the version already deployed and newer releases do not stop
 * it, but its policies (approvals, windows, progression) still hold unless it overrides them with a
 * recorded reason; it always needs the version, the target and a free slot.
 */
export function redeployFacts(facts: ReleaseFacts, overridesPolicies: boolean): ReleaseFacts {
  return {
    ...facts,
    policies: overridesPolicies ? [] : facts.policies,
    newerReleases: [],
    deployedVersionId: null,
    deployedVersionCreatedAt: null,
  };
}

/**
 * Whether a release workflow starts afresh (continue-as-new): past its own event limit, or when the
 * server suggests it, which it does on history size in bytes too — a few large activity results can
 * fill a history long before its event count does.
 */
export function historyIsFull(
  info: { historyLength: number; continueAsNewSuggested: boolean },
  eventLimit: number,
): boolean {
  return info.continueAsNewSuggested || info.historyLength > eventLimit;
}

/** Whether a new evaluation says something the recorded one does not (only then is it written). */
export function sameEvaluation(a: GateEvaluation | null, b: GateEvaluation): boolean {
  return (
    !!a && a.decision === b.decision && a.reason === b.reason && a.nextEvaluationAt === b.nextEvaluationAt
  );
}

/** Whether a job in `status` has reached the point where a verification on `trigger` starts. */
export function verificationTriggered(trigger: string, status: JobStatus): boolean {
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
export function attemptOutcomes(progress: ReleaseProgress): { status: JobStatus }[] {
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

/** What the release's work in progress asks of its workflow on one look. */
export interface AttemptActions {
  /** Pending jobs of the current attempt to hand to their agents. */
  dispatch: string[];
  /** Pushed jobs running in another system, to look at until they end. */
  follow: string[];
  /** Verifications whose trigger was reached, to start measuring. */
  verify: VerificationProgress[];
  /** The current attempt's end, once every job of it ended and its verifications settled. */
  verdict: AttemptVerdict;
}

export type AttemptVerdict =
  { kind: 'running' } | { kind: 'succeeded'; reason: string } | { kind: 'failed'; reason: string };

/**
 * The current attempt's next actions. `handled` holds the ids the workflow already acted on
 * (dispatched jobs, started verifications), so a repeated look does nothing twice.
 */
export function attemptActions(progress: ReleaseProgress, handled: ReadonlySet<string>): AttemptActions {
  const current = progress.jobs.filter((job) => job.attempt === progress.attempt);
  const statusOf = new Map(current.map((job) => [job.id, job.status]));
  const verifications = progress.verifications.filter((v) => statusOf.has(v.jobId));
  return {
    dispatch: current.filter((job) => job.status === 'pending' && !handled.has(job.id)).map((job) => job.id),
    follow: current
      .filter(
        (job) => isPushAgent(job.agentType) && job.status !== 'pending' && !isTerminalJobStatus(job.status),
      )
      .map((job) => job.id),
    verify: verifications.filter(
      (v) =>
        v.status === 'pending' &&
        !handled.has(v.id) &&
        verificationTriggered(v.trigger, statusOf.get(v.jobId)!),
    ),
    verdict: attemptVerdict(current, verifications),
  };
}

function attemptVerdict(
  current: ReleaseProgress['jobs'],
  verifications: VerificationProgress[],
): AttemptVerdict {
  if (current.length === 0 || !current.every((job) => isTerminalJobStatus(job.status)))
    return { kind: 'running' };
  // A verification on `jobFailure` looks into a failure; it never decides the release.
  const gating = verifications.filter((v) => v.trigger !== 'jobFailure');
  const failedJob = current.find((job) => job.status !== 'successful');
  if (failedJob) return { kind: 'failed', reason: `job ${failedJob.id} ended ${failedJob.status}` };
  const failedVerification = gating.find((v) => v.status === 'failed');
  if (failedVerification) return { kind: 'failed', reason: `verification ${failedVerification.id} failed` };
  if (gating.every((v) => v.status === 'passed'))
    return { kind: 'succeeded', reason: 'every job succeeded and verified' };
  return { kind: 'running' };
}

/**
 * One metric's measurements, scored as they come: it passes once `successThreshold` measurements
 * in a row passed (by default all of them), fails once `failureThreshold` in a row failed.
 */
export class MetricScore {
  private taken = 0;
  private run = 0;
  private best = 0;
  private failuresInARow = 0;

  constructor(private readonly metric: Pick<Metric, 'count' | 'successThreshold' | 'failureThreshold'>) {}

  /** Adds a measurement; `measuring` while more are due, then the metric's result. */
  record(passed: boolean): 'measuring' | 'passed' | 'failed' {
    this.taken += 1;
    this.run = passed ? this.run + 1 : 0;
    this.best = Math.max(this.best, this.run);
    this.failuresInARow = passed ? 0 : this.failuresInARow + 1;
    const { count, successThreshold } = this.metric;
    const failureThreshold = this.metric.failureThreshold ?? RULE_DEFAULTS.failureThreshold;
    if (failureThreshold > 0 && this.failuresInARow >= failureThreshold) return 'failed';
    if (this.taken < count) return 'measuring';
    return this.best >= (successThreshold ?? count) ? 'passed' : 'failed';
  }
}

/** A verification's result from its metrics' results (`failure` holds why a metric failed, if known). */
export function verificationResult(results: { name: string; passed: boolean; failure?: string }[]): {
  passed: boolean;
  message: string;
} {
  const failed = results.filter((result) => !result.passed);
  if (failed.length === 0) return { passed: true, message: 'every metric passed' };
  const names = failed.map((result) => (result.failure ? `${result.name} (${result.failure})` : result.name));
  return { passed: false, message: `failed: ${names.join(', ')}` };
}

/**
 * The safety-net wait of an idle release: it starts at `first` and doubles while nothing happens,
 * up to `longest`; a wake starts it over.
 */
export function nextIdleWait(current: number, woken: boolean, first: number, longest: number): number {
  return woken ? first : Math.min(current * 2, longest);
}
