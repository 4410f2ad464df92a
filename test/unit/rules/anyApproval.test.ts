import * as anyApproval from '../../../domain/rules/anyApproval';
import type { ApprovalFact } from '../../../domain/rules/anyApproval';
import type { ReleaseFacts } from '../../../domain/gates';
import type { PolicyRule } from '../../../domain/policies';
import { releaseFacts } from '../../helpers/releaseFacts';

const NOW = new Date('2026-11-26T12:00:00Z');
const approval = (status: ApprovalFact['status'], userId: string, extra: Partial<ApprovalFact> = {}) => ({
  userId,
  userName: userId,
  status,
  reason: null,
  at: new Date(NOW.getTime() - 60_000).toISOString(),
  ...extra,
});

/** The approval rule's one verdict on facts with `rule` as the policy's only rule. */
function verdict(overrides: Partial<ReleaseFacts>, rule: NonNullable<PolicyRule['anyApproval']>) {
  const [evaluation, ...more] = anyApproval.evaluate(releaseFacts(NOW, overrides, [{ anyApproval: rule }]));
  expect(more).toEqual([]);
  return evaluation!;
}

describe('anyApproval (docs/behaviour.md "Approvals")', () => {
  const twoApprovals = { minApprovals: 2 };

  it('passes with enough approvals, naming its policy and rule', () => {
    expect(
      verdict({ approvals: [approval('approved', 'u1'), approval('approved', 'u2')] }, twoApprovals),
    ).toEqual({
      kind: 'anyApproval',
      policyId: 'p1',
      ruleId: 'rule-0',
      state: 'passed',
      reason: '2 of 2 approvals',
    });
  });

  it('waits while approvals are missing', () => {
    expect(verdict({ approvals: [approval('approved', 'u1')] }, twoApprovals)).toMatchObject({
      state: 'waiting',
      reason: '1 of 2 approvals',
    });
    expect(verdict({}, twoApprovals).state).toBe('waiting');
  });

  it('is blocked by a rejection, whatever else was approved, quoting its reason', () => {
    const approvals = [approval('approved', 'u1'), approval('approved', 'u2'), approval('rejected', 'u3')];
    expect(verdict({ approvals }, twoApprovals)).toMatchObject({
      state: 'blocked',
      reason: 'rejected by u3',
    });
    const explained = [approval('rejected', 'u3', { reason: 'breaks the schema' })];
    expect(verdict({ approvals: explained }, twoApprovals).reason).toBe('rejected by u3: breaks the schema');
  });

  it('counts an approval only for what it approved: its digest against what would ship now', () => {
    const approvals = [
      approval('approved', 'u1', { digest: 'ship-a' }),
      approval('approved', 'u2', { digest: 'ship-b' }),
    ];
    expect(verdict({ approvals, shipDigest: 'ship-b' }, twoApprovals)).toMatchObject({
      state: 'waiting',
      reason: '1 of 2 approvals; u1 approved for a different configuration',
    });
    expect(verdict({ approvals, shipDigest: 'ship-a' }, twoApprovals).reason).toBe(
      '1 of 2 approvals; u2 approved for a different configuration',
    );
    // Approvals without a digest (recorded before digests), and facts without one, count.
    const undigested = [approval('approved', 'u1'), approval('approved', 'u2', { digest: 'ship-b' })];
    expect(verdict({ approvals: undigested, shipDigest: 'ship-b' }, twoApprovals).state).toBe('passed');
    expect(verdict({ approvals }, twoApprovals).state).toBe('passed');
  });

  it('counts only approvals whose scope covers what ships, and says why the others do not', () => {
    const approvals = [
      approval('approved', 'u1', { binding: 'covered' }),
      approval('approved', 'u2', { binding: 'pending' }),
      approval('approved', 'u3', { binding: 'unbound' }),
      approval('approved', 'u4', { binding: 'otherConfiguration' }),
    ];
    expect(verdict({ approvals }, twoApprovals)).toMatchObject({
      state: 'waiting',
      reason:
        '1 of 2 approvals; u4 approved for a different configuration; u2 approved; what the approval covers is ' +
        'being recorded; u3 approved before approvals were bound to what ships: approve again',
    });
  });

  describe('that requires another approver than the version’s authors', () => {
    const distinct = { minApprovals: 1, requireDistinctApprover: true };

    it('does not count the creator’s approval, and says so', () => {
      expect(
        verdict({ versionCreatedBy: 'key-1', approvals: [approval('approved', 'key-1')] }, distinct),
      ).toMatchObject({
        state: 'waiting',
        reason: "0 of 1 approvals; the version's creator's approval does not count",
      });
    });

    it('counts anyone else’s, and the creator’s where the rule does not ask', () => {
      const facts = { versionCreatedBy: 'key-1', approvals: [approval('approved', 'key-2')] };
      expect(verdict(facts, distinct).state).toBe('passed');
      const own = { versionCreatedBy: 'key-1', approvals: [approval('approved', 'key-1')] };
      expect(verdict(own, { minApprovals: 1 }).state).toBe('passed');
    });

    it('counts every approval of a version whose creator is unknown', () => {
      expect(verdict({ approvals: [approval('approved', 'key-1')] }, distinct).state).toBe('passed');
    });

    it('counts neither the creator’s nor an editor’s approval, and counts a third key’s', () => {
      const authors = { versionCreatedBy: 'key-1', versionAuthors: ['key-1', 'key-2'] };
      expect(verdict({ ...authors, approvals: [approval('approved', 'key-2')] }, distinct)).toMatchObject({
        state: 'waiting',
        reason: '0 of 1 approvals; approvals by the keys that created or changed the version do not count',
      });
      const third = [approval('approved', 'key-2'), approval('approved', 'key-3')];
      expect(verdict({ ...authors, approvals: third }, distinct).state).toBe('passed');
    });
  });
});
