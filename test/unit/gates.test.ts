import { decideRetry, evaluateGates, type ReleaseFacts } from '../../domain/gates';
import type { PolicyRule } from '../../domain/policies';
import { MAX_RULE_SECONDS } from '../../domain/ruleLimits';
import { releaseFacts } from '../helpers/releaseFacts';

const NOW = new Date('2026-11-19T12:00:00Z');
const minutes = (n: number) => new Date(NOW.getTime() + n * 60_000).toISOString();

function facts(overrides: Partial<ReleaseFacts> = {}, rules: Partial<PolicyRule>[] = []): ReleaseFacts {
  return releaseFacts(NOW, overrides, rules);
}

const approval = (status: 'approved' | 'rejected', userId = 'u1') => ({
  userId,
  userName: userId,
  status,
  reason: null,
  at: minutes(-1),
});

describe('evaluateGates', () => {
  it('proceeds when nothing applies and the target is free', () => {
    expect(evaluateGates(facts(), NOW)).toMatchObject({ decision: 'proceed', reason: 'every rule passed' });
  });

  it('waits while the target is busy with another release', () => {
    const evaluation = evaluateGates(facts({ activeReleaseId: 'r0' }), NOW);
    expect(evaluation).toMatchObject({ decision: 'wait', reason: 'the target is busy with release r0' });
    expect(evaluation.nextEvaluationAt).toBeUndefined();
  });

  it('counts approvals and blocks on a rejection', () => {
    const rule = [{ anyApproval: { minApprovals: 2 } }];
    expect(evaluateGates(facts({ approvals: [approval('approved')] }, rule), NOW)).toMatchObject({
      decision: 'wait',
      reason: '1 of 2 approvals',
    });
    expect(
      evaluateGates(facts({ approvals: [approval('approved'), approval('approved', 'u2')] }, rule), NOW)
        .decision,
    ).toBe('proceed');
    expect(
      evaluateGates(facts({ approvals: [approval('approved'), approval('rejected', 'u2')] }, rule), NOW),
    ).toMatchObject({
      decision: 'blocked',
      reason: 'rejected by u2',
    });
  });

  it('counts an approval only for what it approved: its digest against what would ship now', () => {
    const rule = [{ anyApproval: { minApprovals: 2 } }];
    const bound = (userId: string, digest?: string) => ({
      ...approval('approved', userId),
      ...(digest ? { digest } : {}),
    });
    const approvals = [bound('u1', 'ship-a'), bound('u2', 'ship-b')];
    expect(evaluateGates(facts({ approvals, shipDigest: 'ship-b' }, rule), NOW)).toMatchObject({
      decision: 'wait',
      reason: '1 of 2 approvals; u1 approved for a different configuration',
    });
    expect(evaluateGates(facts({ approvals, shipDigest: 'ship-a' }, rule), NOW).reason).toBe(
      '1 of 2 approvals; u2 approved for a different configuration',
    );
    // Unbound approvals (recorded before digests, or before the release) and facts without a digest count.
    expect(
      evaluateGates(
        facts({ approvals: [bound('u1'), bound('u2', 'ship-b')], shipDigest: 'ship-b' }, rule),
        NOW,
      ).decision,
    ).toBe('proceed');
    expect(evaluateGates(facts({ approvals }, rule), NOW).decision).toBe('proceed');
  });

  it("waits until each dependency's current version on the resource matches its selector", () => {
    const dependency = (tag: string | null) => ({
      deploymentId: 'd-db',
      deploymentName: 'db',
      versionSelector: 'version.tag.startsWith("v2.")',
      currentVersion: tag
        ? {
            id: `v-${tag}`,
            tag,
            name: tag,
            status: 'ready' as const,
            metadata: {},
            config: {},
            createdAt: minutes(-5),
          }
        : null,
    });
    const none = evaluateGates(facts({ versionDependencies: [dependency(null)] }), NOW);
    expect(none).toMatchObject({ decision: 'wait', reason: 'db has no version deployed here yet' });
    expect(none.rules.find((rule) => rule.kind === 'versionDependency')?.waitingOn).toEqual({
      deploymentId: 'd-db',
    });
    expect(evaluateGates(facts({ versionDependencies: [dependency('v1.9.0')] }), NOW)).toMatchObject({
      decision: 'wait',
      reason: 'db runs v1.9.0 here, which does not match version.tag.startsWith("v2.")',
    });
    expect(evaluateGates(facts({ versionDependencies: [dependency('v2.0.1')] }), NOW).decision).toBe(
      'proceed',
    );
    expect(evaluateGates(facts({ versionDependencies: undefined }), NOW).decision).toBe('proceed');
  });

  it("waits under a deploymentDependency rule until another deployment's current version here matches", () => {
    const rule = [
      { deploymentDependency: { dependsOn: 'deployment.slug == "db" && version.tag.startsWith("v2.")' } },
    ];
    const upstream = (tag: string) => [
      {
        deployment: { id: 'd-db', name: 'db', slug: 'db', metadata: {} },
        version: {
          id: `v-${tag}`,
          tag,
          name: tag,
          status: 'ready' as const,
          metadata: {},
          config: {},
          createdAt: minutes(-5),
        },
      },
    ];
    expect(evaluateGates(facts({ upstream: [] }, rule), NOW)).toMatchObject({ decision: 'wait' });
    expect(evaluateGates(facts({ upstream: upstream('v1.0.0') }, rule), NOW).decision).toBe('wait');
    expect(evaluateGates(facts({ upstream: upstream('v2.1.0') }, rule), NOW)).toMatchObject({
      decision: 'proceed',
    });
  });

  it('gates on a planValidationOpa verdict: waits without one, retries after an engine failure, blocks on denials', () => {
    const rule = [{ planValidationOpa: { name: 'no-rc', rego: 'package main' } }];
    expect(evaluateGates(facts({}, rule), NOW)).toMatchObject({
      decision: 'wait',
      reason: 'plan validation no-rc is pending: no verdict on this plan yet',
    });
    const failed = evaluateGates(
      facts({ planValidation: { 'rule-0': { error: 'opa timed out' } } }, rule),
      NOW,
    );
    expect(failed).toMatchObject({
      decision: 'wait',
      reason: 'plan validation no-rc could not run: opa timed out',
      nextEvaluationAt: minutes(1),
    });
    const denials = Array.from({ length: 7 }, (_, n) => `m${n}`);
    expect(evaluateGates(facts({ planValidation: { 'rule-0': { denials } } }, rule), NOW)).toMatchObject({
      decision: 'blocked',
      reason: 'plan validation no-rc denies: m0; m1; m2; m3; m4 (and 2 more)',
    });
    expect(evaluateGates(facts({ planValidation: { 'rule-0': { denials: [] } } }, rule), NOW).decision).toBe(
      'proceed',
    );
  });

  it('waits for a dependency environment to succeed, then for the soak time', () => {
    const rule = [
      {
        environmentProgression: {
          dependsOnEnvironmentSelector: 'environment.name == "staging"',
          minimumSuccessPercentage: 50,
          minimumSoakTimeMinutes: 30,
          successStatuses: ['successful' as const],
        },
      },
    ];
    const progression = (successes: string[]) => [
      { ruleId: 'rule-0', environments: [{ id: 'e0', name: 'staging', targets: 4, successes }] },
    ];
    expect(evaluateGates(facts({ progression: progression([minutes(-50)]) }, rule), NOW).reason).toBe(
      'staging: 1 of 4 targets succeeded, 2 needed',
    );
    const soaking = evaluateGates(
      facts({ progression: progression([minutes(-50), minutes(-10)]) }, rule),
      NOW,
    );
    expect(soaking).toMatchObject({ decision: 'wait', nextEvaluationAt: minutes(20) });
    expect(
      evaluateGates(facts({ progression: progression([minutes(-50), minutes(-40)]) }, rule), NOW).decision,
    ).toBe('proceed');
  });

  it('opens an allow window and closes a deny window at their edges', () => {
    const window = (allowWindow: boolean) => [
      {
        deploymentWindow: {
          rrule: 'FREQ=DAILY;BYHOUR=13;BYMINUTE=0;BYSECOND=0',
          durationMinutes: 60,
          timezone: 'UTC',
          allowWindow,
        },
      },
    ];
    expect(evaluateGates(facts({}, window(true)), NOW)).toMatchObject({
      decision: 'wait',
      nextEvaluationAt: minutes(60),
    });
    expect(evaluateGates(facts({}, window(false)), NOW).decision).toBe('proceed');
    const inside = new Date('2026-11-19T13:30:00Z');
    expect(evaluateGates(facts({}, window(true)), inside).decision).toBe('proceed');
    expect(evaluateGates(facts({}, window(false)), inside)).toMatchObject({
      decision: 'wait',
      nextEvaluationAt: '2026-11-19T14:00:00.000Z',
    });
  });

  // Durations stored before rules had maxima are bounded where they are used
  // (docs/api.md "Records, selectors and release targets").
  it('bounds a deny window stored before rules had maxima, so the evaluation never fails', () => {
    const stored = [
      {
        deploymentWindow: {
          rrule: 'FREQ=DAILY;BYHOUR=11;BYMINUTE=0;BYSECOND=0',
          durationMinutes: 1e13,
          timezone: 'UTC',
          allowWindow: false,
        },
      },
    ];
    expect(evaluateGates(facts({}, stored), NOW)).toMatchObject({
      decision: 'wait',
      nextEvaluationAt: new Date(Date.parse('2026-11-19T11:00:00Z') + MAX_RULE_SECONDS * 1000).toISOString(),
    });
  });

  it('holds releases back at a window rule it cannot evaluate, and waits out a rule that never starts', () => {
    const stored = (rrule: string, allowWindow: boolean) => [
      { deploymentWindow: { rrule, durationMinutes: 60, timezone: 'UTC', allowWindow } },
    ];
    for (const allowWindow of [true, false]) {
      expect(evaluateGates(facts({}, stored('FREQ=YEARLY;BYWEEKNO=20', allowWindow)), NOW)).toMatchObject({
        decision: 'blocked',
        reason: "the window's rule cannot be evaluated: BYWEEKNO is not supported",
      });
    }
    const never = evaluateGates(facts({}, stored('FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31', true)), NOW);
    expect(never).toMatchObject({ decision: 'wait', nextEvaluationAt: '2036-11-19T12:00:00.000Z' });
    expect(evaluateGates(facts({}, stored('FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31', false)), NOW).decision).toBe(
      'proceed',
    );
  });

  it('cools down after the deployed version was created, but not for the version itself', () => {
    const rule = [{ versionCooldown: { intervalSeconds: 3600 } }];
    const deployed = { deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-20) };
    expect(evaluateGates(facts(deployed, rule), NOW)).toMatchObject({
      decision: 'wait',
      nextEvaluationAt: minutes(40),
    });
  });

  it('waits, instead of failing, on a cooldown saved before durations had a maximum', () => {
    const rule = [{ versionCooldown: { intervalSeconds: 1e13 } }];
    const deployed = { deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-20) };
    expect(evaluateGates(facts(deployed, rule), NOW)).toMatchObject({
      decision: 'wait',
      nextEvaluationAt: '+275760-09-13T00:00:00.000Z',
    });
  });

  it('spaces a gradual rollout by position', () => {
    const rule = [{ gradualRollout: { rolloutType: 'linear' as const, timeScaleInterval: 600 } }];
    expect(
      evaluateGates(facts({ rollout: { position: 3, total: 10, startedAt: minutes(-10) } }, rule), NOW),
    ).toMatchObject({
      decision: 'wait',
      nextEvaluationAt: minutes(20),
    });
    const normalized = [
      { gradualRollout: { rolloutType: 'linear-normalized' as const, timeScaleInterval: 600 } },
    ];
    expect(
      evaluateGates(facts({ rollout: { position: 9, total: 10, startedAt: minutes(-10) } }, normalized), NOW)
        .decision,
    ).toBe('proceed');
  });

  it('blocks a version its selector excludes, and is superseded only by a newer version that can deploy', () => {
    const rule = [{ versionSelector: { selector: 'version.tag.startsWith("2.")' } }];
    expect(evaluateGates(facts({}, rule), NOW).decision).toBe('blocked');

    const newer = (tag: string, status = 'ready', rejected = false) => ({
      id: 'r2',
      rejected,
      version: { id: 'v2', tag, name: null, status, metadata: {}, config: {}, createdAt: minutes(-1) },
    });
    expect(evaluateGates(facts({ newerReleases: [newer('1.1.0')] }), NOW).decision).toBe('superseded');
    expect(evaluateGates(facts({ newerReleases: [newer('1.1.0', 'ready', true)] }), NOW).decision).toBe(
      'proceed',
    );
    expect(evaluateGates(facts({ newerReleases: [newer('1.1.0', 'failed')] }), NOW).decision).toBe('proceed');
    const admitted = facts(
      { version: { ...facts().version, tag: '2.0.0' }, newerReleases: [newer('1.9.0')] },
      rule,
    );
    expect(evaluateGates(admitted, NOW).decision).toBe('proceed');
  });

  it('is superseded when a newer version already runs on the target', () => {
    const evaluation = evaluateGates(
      facts({ deployedVersionId: 'v9', deployedVersionCreatedAt: minutes(-1) }),
      NOW,
    );
    expect(evaluation.decision).toBe('superseded');
  });

  it('withdraws when the version is no longer ready or the target is gone', () => {
    expect(evaluateGates(facts({ version: { ...facts().version, status: 'failed' } }), NOW).decision).toBe(
      'withdrawn',
    );
    expect(evaluateGates(facts({ targetExists: false }), NOW).decision).toBe('withdrawn');
  });

  it('takes the earliest time any waiting rule can change', () => {
    const rules = [
      { versionCooldown: { intervalSeconds: 3600 } },
      {
        deploymentWindow: {
          rrule: 'FREQ=DAILY;BYHOUR=13;BYMINUTE=0;BYSECOND=0',
          durationMinutes: 60,
          timezone: 'UTC',
          allowWindow: true,
        },
      },
    ];
    const evaluation = evaluateGates(
      facts({ deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-50) }, rules),
      NOW,
    );
    expect(evaluation.nextEvaluationAt).toBe(minutes(10));
  });
});

describe('decideRetry', () => {
  const retry = (spec: NonNullable<PolicyRule['retry']>): PolicyRule[] => [
    { id: 'r', retry: spec } as PolicyRule,
  ];

  it('gives one job without a retry rule', () => {
    expect(decideRetry([], [{ status: 'failure' }])).toMatchObject({ retry: false });
  });

  it('retries up to maxRetries, with linear or capped exponential backoff', () => {
    const linear = retry({ maxRetries: 2, backoffSeconds: 10, backoffStrategy: 'linear' });
    expect(decideRetry(linear, [{ status: 'failure' }])).toEqual({
      retry: true,
      reason: 'retry 1 of 2',
      backoffMs: 10_000,
    });
    expect(
      decideRetry(linear, [{ status: 'failure' }, { status: 'failure' }, { status: 'failure' }]).retry,
    ).toBe(false);
    const exponential = retry({
      maxRetries: 5,
      backoffSeconds: 10,
      backoffStrategy: 'exponential',
      maxBackoffSeconds: 30,
    });
    expect(decideRetry(exponential, [{ status: 'failure' }, { status: 'failure' }]).backoffMs).toBe(20_000);
    expect(
      decideRetry(exponential, [{ status: 'failure' }, { status: 'failure' }, { status: 'failure' }])
        .backoffMs,
    ).toBe(30_000);
  });

  it('never backs off longer than a year, however many retries double it', () => {
    const exponential = retry({ maxRetries: 100, backoffSeconds: 86_400, backoffStrategy: 'exponential' });
    const attempts = Array.from({ length: 90 }, () => ({ status: 'failure' as const }));
    expect(decideRetry(exponential, attempts).backoffMs).toBe(366 * 86_400 * 1000);
  });

  it('bounds a backoff stored before rules had maxima, whatever it holds', () => {
    const stored = (spec: Record<string, unknown>) =>
      retry({ maxRetries: 3, backoffStrategy: 'linear', ...spec } as NonNullable<PolicyRule['retry']>);
    const once = [{ status: 'failure' as const }];
    expect(decideRetry(stored({ backoffSeconds: 1e13 }), once).backoffMs).toBe(MAX_RULE_SECONDS * 1000);
    expect(decideRetry(stored({ backoffSeconds: '30 seconds' }), once).backoffMs).toBe(0);
    expect(decideRetry(stored({ backoffSeconds: 60, maxBackoffSeconds: '1m' }), once).backoffMs).toBe(0);
    expect(decideRetry(stored({ backoffSeconds: -60 }), once).backoffMs).toBe(0);
  });

  it('counts only the statuses the rule names', () => {
    const onlyFailures = retry({ maxRetries: 1, retryOnStatuses: ['failure'], backoffStrategy: 'linear' });
    expect(decideRetry(onlyFailures, [{ status: 'cancelled' }, { status: 'failure' }]).retry).toBe(true);
  });
});
