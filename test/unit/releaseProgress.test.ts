import type { GateEvaluation, ReleaseFacts } from '../../domain/gates';
import {
  attemptActions,
  attemptOutcomes,
  MetricScore,
  nextIdleWait,
  historyIsFull,
  redeployFacts,
  sameEvaluation,
  verificationResult,
  verificationTriggered,
  type ReleaseProgress,
  type VerificationProgress,
} from '../../domain/releaseProgress';
import type { JobStatus } from '../../domain/jobStatus';
import type { JobAgentType } from '../../domain/jobAgentTypes';

function job(id: string, status: JobStatus, attempt = 1, agentType: JobAgentType = 'http-pull') {
  return { id, status, attempt, agentType };
}

function verification(id: string, jobId: string, trigger: string, status = 'pending'): VerificationProgress {
  return { id, jobId, trigger, status, metrics: [] };
}

function progress(
  jobs: ReleaseProgress['jobs'],
  verifications: VerificationProgress[] = [],
): ReleaseProgress {
  return {
    phase: 'running',
    attempt: Math.max(0, ...jobs.map((j) => j.attempt)),
    jobs,
    verifications,
  };
}

describe('verificationTriggered', () => {
  it.each<[string, JobStatus, boolean]>([
    ['jobCreated', 'pending', true],
    ['jobStarted', 'queued', false],
    ['jobStarted', 'in_progress', true],
    ['jobStarted', 'successful', true],
    ['jobSuccess', 'in_progress', false],
    ['jobSuccess', 'successful', true],
    ['jobFailure', 'successful', false],
    ['jobFailure', 'failure', true],
    ['jobFailure', 'in_progress', false],
    ['somethingElse', 'successful', false],
  ])('%s with a job %s: %s', (trigger, status, expected) => {
    expect(verificationTriggered(trigger, status)).toBe(expected);
  });
});

describe('attemptOutcomes', () => {
  it("gives each attempt its first failed job's status, or failure for a failed verification", () => {
    const outcomes = attemptOutcomes(
      progress(
        [
          job('a1', 'successful', 1),
          job('a2', 'invalid_job_agent', 1),
          job('b1', 'successful', 2),
          job('c1', 'successful', 3),
        ],
        [verification('v2', 'b1', 'jobSuccess', 'failed'), verification('v3', 'c1', 'jobSuccess', 'passed')],
      ),
    );
    expect(outcomes).toEqual([
      { status: 'invalid_job_agent' },
      { status: 'failure' },
      { status: 'successful' },
    ]);
  });
});

describe('attemptActions', () => {
  it('dispatches pending jobs of the current attempt once, and follows pushed jobs that run', () => {
    const p = progress([
      job('old', 'pending', 1),
      job('pull', 'pending', 2),
      job('pushed', 'triggered', 2, 'github-app'),
      job('pushedPending', 'pending', 2, 'github-app'),
    ]);
    const first = attemptActions(p, new Set());
    expect(first.dispatch).toEqual(['pull', 'pushedPending']);
    expect(first.follow).toEqual(['pushed']);
    expect(first.verdict).toEqual({ kind: 'running' });
    expect(attemptActions(p, new Set(['pull'])).dispatch).toEqual(['pushedPending']);
  });

  it('starts verifications whose trigger the job reached, once', () => {
    const p = progress(
      [job('j', 'in_progress')],
      [
        verification('started', 'j', 'jobStarted'),
        verification('success', 'j', 'jobSuccess'),
        verification('done', 'j', 'jobStarted', 'passed'),
      ],
    );
    expect(attemptActions(p, new Set()).verify.map((v) => v.id)).toEqual(['started']);
    expect(attemptActions(p, new Set(['started'])).verify).toEqual([]);
  });

  it('succeeds once every job succeeded and every verification that decides passed', () => {
    const passing = progress(
      [job('j', 'successful')],
      [verification('v', 'j', 'jobSuccess', 'passed'), verification('f', 'j', 'jobFailure')],
    );
    expect(attemptActions(passing, new Set(['v'])).verdict).toEqual({
      kind: 'succeeded',
      reason: 'every job succeeded and verified',
    });
    const measuring = progress([job('j', 'successful')], [verification('v', 'j', 'jobSuccess', 'running')]);
    expect(attemptActions(measuring, new Set(['v'])).verdict).toEqual({ kind: 'running' });
  });

  it('fails on a failed job before a verification, and on a failed verification', () => {
    expect(
      attemptActions(progress([job('j', 'successful'), job('k', 'failure')]), new Set()).verdict,
    ).toEqual({
      kind: 'failed',
      reason: 'job k ended failure',
    });
    const verified = progress([job('j', 'successful')], [verification('v', 'j', 'jobSuccess', 'failed')]);
    expect(attemptActions(verified, new Set()).verdict).toEqual({
      kind: 'failed',
      reason: 'verification v failed',
    });
  });

  it('waits while any job of the current attempt runs, and without jobs', () => {
    expect(
      attemptActions(progress([job('j', 'successful'), job('k', 'queued')]), new Set()).verdict.kind,
    ).toBe('running');
    expect(attemptActions(progress([]), new Set()).verdict.kind).toBe('running');
  });
});

describe('MetricScore', () => {
  const record = (score: MetricScore, results: boolean[]) => results.map((passed) => score.record(passed));

  it('passes when every measurement passed, by default', () => {
    expect(record(new MetricScore({ count: 3, failureThreshold: 0 }), [true, true, true])).toEqual([
      'measuring',
      'measuring',
      'passed',
    ]);
    expect(record(new MetricScore({ count: 2, failureThreshold: 0 }), [true, false])).toEqual([
      'measuring',
      'failed',
    ]);
  });

  it('passes on a run of successThreshold measurements in a row', () => {
    const score = new MetricScore({ count: 4, successThreshold: 2, failureThreshold: 0 });
    expect(record(score, [false, true, true, false])).toEqual([
      'measuring',
      'measuring',
      'measuring',
      'passed',
    ]);
    const broken = new MetricScore({ count: 4, successThreshold: 2, failureThreshold: 0 });
    expect(record(broken, [true, false, true, false])).toEqual([
      'measuring',
      'measuring',
      'measuring',
      'failed',
    ]);
  });

  it('fails as soon as failureThreshold measurements in a row failed', () => {
    const score = new MetricScore({ count: 10, successThreshold: 1, failureThreshold: 2 });
    expect(record(score, [false, true, false, false])).toEqual([
      'measuring',
      'measuring',
      'measuring',
      'failed',
    ]);
  });
});

describe('verificationResult', () => {
  it('names the failed metrics and why', () => {
    expect(verificationResult([{ name: 'a', passed: true }])).toEqual({
      passed: true,
      message: 'every metric passed',
    });
    expect(
      verificationResult([
        { name: 'a', passed: false },
        { name: 'b', passed: true },
        { name: 'c', passed: false, failure: 'probe failed: connection refused' },
      ]),
    ).toEqual({ passed: false, message: 'failed: a, c (probe failed: connection refused)' });
  });
});

describe('nextIdleWait', () => {
  it('doubles up to the longest wait while idle, and starts over when woken', () => {
    expect(nextIdleWait(10, false, 10, 35)).toBe(20);
    expect(nextIdleWait(20, false, 10, 35)).toBe(35);
    expect(nextIdleWait(35, true, 10, 35)).toBe(10);
  });
});

describe('sameEvaluation and redeployFacts', () => {
  const evaluation: GateEvaluation = {
    decision: 'wait',
    reason: 'approval',
    rules: [],
    evaluatedAt: '2026-11-24T10:00:00.000Z',
  };

  it('compares what an evaluation says, not when it was made', () => {
    expect(sameEvaluation(null, evaluation)).toBe(false);
    expect(sameEvaluation(evaluation, { ...evaluation, evaluatedAt: '2026-11-24T11:00:00.000Z' })).toBe(true);
    expect(sameEvaluation(evaluation, { ...evaluation, reason: 'window' })).toBe(false);
    expect(sameEvaluation(evaluation, { ...evaluation, nextEvaluationAt: '2026-11-24T12:00:00.000Z' })).toBe(
      false,
    );
  });

  it('drops what is deployed for a redeploy, and its policies only under an override (docs/api.md "Releases and jobs")', () => {
    const facts = {
      policies: [{ id: 'p' }],
      newerReleases: [{ id: 'r' }],
      deployedVersionId: 'v0',
      deployedVersionCreatedAt: '2026-11-01T00:00:00Z',
      activeJob: true,
    } as unknown as ReleaseFacts;
    const redeployed = {
      newerReleases: [],
      deployedVersionId: null,
      deployedVersionCreatedAt: null,
      activeJob: true,
    };
    expect(redeployFacts(facts, false)).toEqual({ ...redeployed, policies: [{ id: 'p' }] });
    expect(redeployFacts(facts, true)).toEqual({ ...redeployed, policies: [] });
  });

  it('continues as new past the event limit or when the server suggests it', () => {
    expect(historyIsFull({ historyLength: 100, continueAsNewSuggested: false }, 1000)).toBe(false);
    expect(historyIsFull({ historyLength: 1001, continueAsNewSuggested: false }, 1000)).toBe(true);
    expect(historyIsFull({ historyLength: 100, continueAsNewSuggested: true }, 1000)).toBe(true);
  });
});
