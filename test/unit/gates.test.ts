import { evaluateGates, passesEveryRule, type ReleaseFacts } from '../../domain/gates';
import type { PolicyRule } from '../../domain/policies';
import { releaseFacts } from '../helpers/releaseFacts';

/*
 * The gates' combination of the rules' verdicts (each rule kind's own cases: test/unit/rules/).
 */

const NOW = new Date('2026-11-19T12:00:00Z');
const minutes = (n: number) => new Date(NOW.getTime() + n * 60_000).toISOString();

function facts(overrides: Partial<ReleaseFacts> = {}, rules: Partial<PolicyRule>[] = []): ReleaseFacts {
  return releaseFacts(NOW, overrides, rules);
}

const rejection = {
  userId: 'u2',
  userName: 'u2',
  status: 'rejected' as const,
  reason: null,
  at: minutes(-1),
};
const cooldown = { versionCooldown: { intervalSeconds: 3600 } };
const recentlyDeployed = { deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-50) };

describe('evaluateGates', () => {
  it('proceeds when nothing applies and the target is free', () => {
    expect(evaluateGates(facts(), NOW)).toMatchObject({ decision: 'proceed', reason: 'every rule passed' });
  });

  it('waits while the target is busy with another release', () => {
    const evaluation = evaluateGates(facts({ activeReleaseId: 'r0' }), NOW);
    expect(evaluation).toMatchObject({ decision: 'wait', reason: 'the target is busy with release r0' });
    expect(evaluation.nextEvaluationAt).toBeUndefined();
    expect(evaluateGates(facts({ activeReleaseId: 'r1' }), NOW).decision).toBe('proceed');
  });

  it('is blocked by a blocked rule, whatever else waits, with that rule’s reason', () => {
    const evaluation = evaluateGates(
      facts({ ...recentlyDeployed, approvals: [rejection], activeReleaseId: 'r0' }, [
        cooldown,
        { anyApproval: { minApprovals: 1 } },
      ]),
      NOW,
    );
    expect(evaluation).toMatchObject({ decision: 'blocked', reason: 'rejected by u2' });
    expect(evaluation.rules.map((rule) => [rule.kind, rule.state])).toEqual([
      ['versionSelector', 'passed'],
      ['anyApproval', 'blocked'],
      ['versionCooldown', 'waiting'],
      ['target', 'waiting'],
    ]);
  });

  it('waits with every waiting rule’s reason, and takes the earliest time any of them can change', () => {
    const window = {
      deploymentWindow: {
        rrule: 'FREQ=DAILY;BYHOUR=13;BYMINUTE=0;BYSECOND=0',
        durationMinutes: 60,
        timezone: 'UTC',
        allowWindow: true,
      },
    };
    const evaluation = evaluateGates(
      facts({ ...recentlyDeployed, activeReleaseId: 'r0' }, [cooldown, window]),
      NOW,
    );
    expect(evaluation).toMatchObject({
      decision: 'wait',
      reason: `outside the allow window; it opens at ${minutes(60)}; cooling down until ${minutes(10)}; the target is busy with release r0`,
      nextEvaluationAt: minutes(10),
    });
  });

  it('is superseded only by a newer version that can deploy', () => {
    const rule = [{ versionSelector: { selector: 'version.tag.startsWith("2.")' } }];
    const newer = (tag: string, status = 'ready', rejected = false) => ({
      id: 'r2',
      rejected,
      version: { id: 'v2', tag, name: null, status, metadata: {}, config: {}, createdAt: minutes(-1) },
    });
    expect(evaluateGates(facts({ newerReleases: [newer('1.1.0')] }), NOW)).toMatchObject({
      decision: 'superseded',
      reason: 'superseded by version 1.1.0 (release r2)',
      rules: [],
    });
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
    expect(evaluation).toMatchObject({
      decision: 'superseded',
      reason: 'a newer version already runs on the target',
    });
    expect(
      evaluateGates(facts({ deployedVersionId: 'v0', deployedVersionCreatedAt: minutes(-60) }), NOW).decision,
    ).toBe('proceed');
  });

  it('withdraws when the version is no longer ready or the target is gone', () => {
    expect(evaluateGates(facts({ version: { ...facts().version, status: 'failed' } }), NOW)).toMatchObject({
      decision: 'withdrawn',
      reason: 'version 1.0.0 is failed',
    });
    expect(evaluateGates(facts({ targetExists: false }), NOW).decision).toBe('withdrawn');
  });
});

describe('passesEveryRule', () => {
  const approvalAndCooldown = [{ anyApproval: { minApprovals: 1 } }, cooldown];

  it('passes a version only when every rule passes, whatever holds the target', () => {
    expect(passesEveryRule(facts({ activeReleaseId: 'r0' }), NOW)).toBe(true);
    expect(passesEveryRule(facts(recentlyDeployed, approvalAndCooldown), NOW)).toBe(false);
  });

  it('leaves out the rules it is told to', () => {
    const waiting = facts(recentlyDeployed, approvalAndCooldown);
    expect(passesEveryRule(waiting, NOW, new Set(['rule-0']))).toBe(false);
    expect(passesEveryRule(waiting, NOW, new Set(['rule-0', 'rule-1']))).toBe(true);
  });
});
