import { evaluateGates } from '../../domain/gates';
import { activeSkip, skipExpiry, type SkipFact } from '../../domain/policySkips';
import { releaseFacts } from '../helpers/releaseFacts';

const NOW = new Date('2026-11-26T12:00:00Z');
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString();
const skip = (ruleId: string, expiresAt: string, reason = 'hotfix'): SkipFact => ({
  id: `skip-${ruleId}-${expiresAt}`,
  ruleId,
  reason,
  expiresAt,
  createdBy: { id: 'k1', name: 'Ada' },
});

describe('policy skips (docs/behaviour.md "Policy skips")', () => {
  const approvalOnly = [{ anyApproval: { minApprovals: 1 } }];

  it('pass the rule they name, saying who, until when and why', () => {
    const facts = releaseFacts(NOW, { skips: [skip('rule-0', at(3600))] }, approvalOnly);
    const evaluation = evaluateGates(facts, NOW);
    expect(evaluation.decision).toBe('proceed');
    expect(evaluation.rules.find((rule) => rule.ruleId === 'rule-0')).toEqual({
      kind: 'anyApproval',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'passed',
      reason: `skipped by Ada until ${at(3600)}: hotfix`,
      skipId: `skip-rule-0-${at(3600)}`,
    });
  });

  it('stop counting once expired, and never pass another rule', () => {
    const expired = releaseFacts(NOW, { skips: [skip('rule-0', at(-1))] }, approvalOnly);
    expect(evaluateGates(expired, NOW)).toMatchObject({
      decision: 'wait',
      reason: expect.stringContaining('0 of 1'),
    });
    const other = releaseFacts(NOW, { skips: [skip('rule-9', at(3600))] }, approvalOnly);
    expect(evaluateGates(other, NOW).decision).toBe('wait');
  });

  it('leave a rule that passes on its own as it is', () => {
    const approved = releaseFacts(
      NOW,
      {
        skips: [skip('rule-0', at(3600))],
        approvals: [{ userId: 'u1', userName: 'u1', status: 'approved', reason: null, at: at(-60) }],
      },
      approvalOnly,
    );
    expect(evaluateGates(approved, NOW).rules.find((rule) => rule.ruleId === 'rule-0')?.reason).not.toMatch(
      /skipped/,
    );
  });

  it('take the longest-lasting of several skips of one rule', () => {
    const skips = [
      skip('rule-0', at(60), 'short'),
      skip('rule-0', at(600), 'long'),
      skip('rule-0', at(-5), 'gone'),
    ];
    expect(activeSkip(skips, 'rule-0', NOW)?.reason).toBe('long');
    expect(activeSkip(skips, 'rule-1', NOW)).toBeUndefined();
  });

  it('expire by default after the default life, and refuse a past or too distant expiry', () => {
    const lifetimes = { defaultSeconds: 3600, maxSeconds: 86_400 };
    expect(skipExpiry(undefined, NOW, lifetimes).toISOString()).toBe(at(3600));
    expect(skipExpiry(at(86_400), NOW, lifetimes).toISOString()).toBe(at(86_400));
    expect(() => skipExpiry(at(0), NOW, lifetimes)).toThrow(/expiresAt must be in the future/);
    expect(() => skipExpiry(at(86_401), NOW, lifetimes)).toThrow(/within 86400 seconds/);
  });
});
