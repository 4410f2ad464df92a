import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import {
  appendMeasurement,
  recordEvaluation,
  releaseProgress,
  settleVerification,
  startReleaseJobs,
  finishRelease as finish,
  type FinalPhase,
  withPlanValidation,
} from '../engine/executor';
import { JobSchema, JobVerificationSchema, type Job } from '../db/entities';
import { changeJobStatus } from '../engine/jobMoves';
import { loadRelease } from '../engine/eligibility';
import type { SecretBox } from '../db/secrets';
import { SecretReferenceError, withAgentSecrets, withProviderSecrets } from '../db/secretReferences';
import { jobSecrets, openProvider } from '../db/sensitiveValues';
import type { GateEvaluation } from '../domain/gates';
import type { RegoEngine } from '../domain/planValidation';
import { withShipDigest } from '../engine/planner';
import { isPushAgent } from '../domain/jobAgentTypes';
import { isTerminalJobStatus, type JobStatus } from '../domain/jobStatus';
import type { PolicyRule } from '../domain/policies';
import type { Metric, ReleaseProgress } from '../domain/releaseProgress';
import { selectorMatches } from '../domain/selectors';
import { dispatchers } from './agents';
import { endAtDispatch } from './agents/dispatcher';
import type {
  DispatchResult,
  DispatchStep,
  FollowResult,
  LoadedRelease,
  MeasurementResult,
  StartJobsResult,
} from '../domain/activityResults';
import { describeEgressFailure, type Egress } from './egress';
import {
  metricRequest,
  metricResult,
  oauth2TokenRequest,
  type HttpProvider,
  type MetricRequest,
  type MetricResponse,
} from '../domain/metricProviders';

export interface ReleaseActivityDeps {
  orm: Database;
  secrets: SecretBox;
  rego: RegoEngine;
  /** Every request to another system (agents' services, metric providers) goes through it. */
  egress: Egress;
}

const HTTP_BODY_LIMIT = 64 * 1024;

/** One request of a measurement under the egress policy; a failure to get an answer is a result too. */
async function send(egress: Egress, request: MetricRequest): Promise<MetricResponse> {
  const started = Date.now();
  try {
    const response = await egress.request(request.url, { ...request, maxBytes: HTTP_BODY_LIMIT });
    const body = response.text.slice(0, HTTP_BODY_LIMIT);
    let json: unknown = null;
    try {
      json = JSON.parse(body);
    } catch {
      json = null;
    }
    return { ok: response.ok, statusCode: response.status, body, json, durationMs: Date.now() - started };
  } catch (error) {
    return {
      ok: false,
      statusCode: 0,
      body: '',
      json: null,
      durationMs: Date.now() - started,
      error: describeEgressFailure(error),
    };
  }
}

/** A provider's measurement: an OAuth2 token first where the provider needs one, then its query. */
async function measure(egress: Egress, provider: HttpProvider): Promise<MetricResponse> {
  const tokenRequest = oauth2TokenRequest(provider);
  let bearer: string | undefined;
  if (tokenRequest) {
    const token = await send(egress, tokenRequest);
    const accessToken = (token.json as { access_token?: unknown } | null)?.access_token;
    if (!token.ok || typeof accessToken !== 'string')
      return {
        ...token,
        ok: false,
        error: token.error ?? `the OAuth2 token request answered ${token.statusCode}`,
      };
    bearer = accessToken;
  }
  return send(egress, metricRequest(provider, new Date(), bearer));
}

/** One measurement of a verification's metric over HTTP, recorded on the verification. */
async function measureHttpMetric(
  { fork, secrets, egress }: { fork: () => EntityManager; secrets: SecretBox; egress: Egress },
  verificationId: string,
  metricIndex: number,
): Promise<MeasurementResult> {
  const em = fork();
  const verification = await em.findOne(JobVerificationSchema, { id: verificationId });
  const metric = verification?.metrics[metricIndex] as Metric | undefined;
  if (!verification || !metric || metric.provider.type === 'sleep')
    return { passed: false, error: 'no such metric' };
  const job = await em.findOneOrFail(JobSchema, { id: verification.jobId });
  let provider: Metric['provider'];
  try {
    provider = await withProviderSecrets(
      em,
      secrets,
      job.workspaceId,
      openProvider(jobSecrets(secrets, job), metric.provider),
    );
  } catch (error) {
    if (!(error instanceof SecretReferenceError)) throw error;
    // A credential that cannot be had fails the measurement visibly, as an unreachable provider does.
    await appendMeasurement(fork(), verificationId, {
      metric: metric.name,
      at: new Date().toISOString(),
      passed: false,
      error: error.message,
    });
    return { passed: false };
  }
  const result = metricResult(provider, await measure(egress, provider));
  const failed = metric.failureCondition
    ? selectorMatches('measurement', metric.failureCondition, { result })
    : false;
  const passed = !failed && selectorMatches('measurement', metric.successCondition, { result });
  await appendMeasurement(fork(), verificationId, {
    metric: metric.name,
    at: new Date().toISOString(),
    passed,
    result: {
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      ...(result.value !== undefined ? { value: result.value } : {}),
      ...(result.status !== undefined ? { status: result.status } : {}),
    },
    ...(result.error ? { error: String(result.error) } : {}),
  });
  return { passed };
}

/**
 * The database steps of a release's life. Each is idempotent, since Temporal retries an activity
 * whose worker died: running one twice leaves the same rows as running it once.
 */
export function createReleaseActivities(deps: ReleaseActivityDeps) {
  return { ...releaseSteps(deps), ...jobDriverSteps(deps), ...verificationSteps(deps) };
}

/** The release's own steps: its facts, its evaluation, its jobs' creation and its end. */
function releaseSteps({ orm, secrets, rego }: ReleaseActivityDeps) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    /**
     * The release's facts; what it would ship now when an approval is bound to a digest; with a
     * `planValidationOpa` rule, its verdicts on the release's plan (recorded for explanations).
     */
    async loadReleaseFacts(releaseId: string): Promise<LoadedRelease | null> {
      const loaded = await loadRelease(fork(), releaseId);
      if (!loaded || loaded.phase !== 'pending') return loaded;
      return withPlanValidation(fork(), secrets, rego, await withShipDigest(fork(), secrets, loaded));
    },

    /** Keeps the latest evaluation on the release, so GET /releases/{id} can say why it waits. */
    async recordEvaluation(releaseId: string, evaluation: GateEvaluation): Promise<void> {
      await recordEvaluation(fork(), releaseId, evaluation);
    },

    async startJobs(releaseId: string, attempt: number): Promise<StartJobsResult> {
      return startReleaseJobs(fork(), secrets, releaseId, attempt);
    },

    async releaseProgress(releaseId: string): Promise<ReleaseProgress | null> {
      return releaseProgress(fork(), releaseId);
    },

    /** The rules of the target's policies, for deciding whether a failed attempt is retried. */
    async releaseRules(releaseId: string): Promise<PolicyRule[]> {
      const loaded = await loadRelease(fork(), releaseId);
      return loaded?.facts.policies.flatMap((policy) => policy.rules) ?? [];
    },

    async finishRelease(releaseId: string, phase: FinalPhase, reason: string): Promise<void> {
      await finish(fork(), releaseId, phase, reason);
    },
  };
}

/** A job's hand-over to its agent, the following of a pushed job's remote run, and the test runner's end. */
function jobDriverSteps({ orm, secrets, egress }: ReleaseActivityDeps) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    /** Hands a job to its agent, through the dispatcher of the agent's type. */
    async dispatchJob(jobId: string, step?: DispatchStep): Promise<DispatchResult> {
      const em = fork();
      const job = await em.findOne(JobSchema, { id: jobId });
      if (!job) return { kind: 'ended', status: 'cancelled' };
      if (!job.agentType || isTerminalJobStatus(job.status)) return { kind: 'ended', status: job.status };
      // A retry after a worker died mid-dispatch can find the job already moved on. A pushed job
      // was sent: it is never sent twice. The other agents' dispatch answers again what it did.
      if (isPushAgent(job.agentType) && job.status !== 'pending') return { kind: 'triggered' };
      let sent: Job;
      try {
        sent = await withAgentSecrets(em, secrets, job);
      } catch (error) {
        if (!(error instanceof SecretReferenceError)) throw error;
        return endAtDispatch(em, job.id, 'invalid_job_agent', error.message);
      }
      return dispatchers[job.agentType].dispatch(
        sent,
        { em, egress, secrets: jobSecrets(secrets, job) },
        step,
      );
    },

    /** One look at a pushed job's remote run (see `JobDispatcher.follow`). */
    async followJob(jobId: string): Promise<FollowResult> {
      const em = fork();
      const job = await em.findOne(JobSchema, { id: jobId });
      const follow = job?.agentType ? dispatchers[job.agentType].follow : undefined;
      if (!job || !follow) return { done: true };
      // A reference that no longer resolves leaves the remote run unfollowed, not the release stuck.
      const sent = await withAgentSecrets(em, secrets, job).catch((error: unknown) => {
        if (error instanceof SecretReferenceError) return undefined;
        throw error;
      });
      if (!sent) return { done: true };
      return follow(sent, { em, egress, secrets: jobSecrets(secrets, job) });
    },

    /** Ends a job the workflow itself completes (the test runner's); the workflow looks again on its own. */
    async completeJob(jobId: string, status: JobStatus, message: string | null): Promise<void> {
      const em = fork();
      const job = await em.findOne(JobSchema, { id: jobId });
      if (!job || job.completedAt) return;
      await changeJobStatus(em, {}, jobId, { status, message, wakeRelease: false });
    },
  };
}

/** A verification's measurements and its verdict. */
function verificationSteps({ orm, secrets, egress }: ReleaseActivityDeps) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    /**
     * One measurement of a metric measured over HTTP (`http`, `prometheus`, `datadog`,
     * `terraformCloudRun`; domain/metricProviders.ts): its request or requests, then the success and
     * failure conditions over its result.
     */
    async measureHttpMetric(verificationId: string, metricIndex: number): Promise<MeasurementResult> {
      return measureHttpMetric({ fork, secrets, egress }, verificationId, metricIndex);
    },

    /** A `sleep` metric's measurement: the workflow waited; this records it. */
    async recordSleepMeasurement(verificationId: string, metricName: string): Promise<MeasurementResult> {
      await appendMeasurement(fork(), verificationId, {
        metric: metricName,
        at: new Date().toISOString(),
        passed: true,
      });
      return { passed: true };
    },

    async settleVerification(verificationId: string, passed: boolean, message: string): Promise<void> {
      await settleVerification(fork(), verificationId, passed, message);
    },
  };
}
