import { evaluateGates } from '../../domain/gates';
import { releaseFacts } from '../helpers/releaseFacts';

const NOW = new Date('2026-11-26T12:00:00Z');
const approval = (userId: string) => ({
  userId,
  userName: userId,
  status: 'approved' as const,
  reason: null,
  at: new Date(NOW.getTime() - 60_000).toISOString(),
});

describe('an approval rule that requires another approver than the version’s creator (docs/behaviour.md "Approvals")', () => {
  const rule = { anyApproval: { minApprovals: 1, requireDistinctApprover: true } };

  it('does not count the creator’s approval, and says so', () => {
    const facts = releaseFacts(NOW, { versionCreatedBy: 'key-1', approvals: [approval('key-1')] }, [rule]);
    const evaluation = evaluateGates(facts, NOW);
    expect(evaluation.decision).toBe('wait');
    expect(evaluation.reason).toBe("0 of 1 approvals; the version's creator's approval does not count");
  });

  it('counts anyone else’s, and the creator’s where the rule does not ask', () => {
    const other = releaseFacts(NOW, { versionCreatedBy: 'key-1', approvals: [approval('key-2')] }, [rule]);
    expect(evaluateGates(other, NOW).decision).toBe('proceed');
    const plain = releaseFacts(NOW, { versionCreatedBy: 'key-1', approvals: [approval('key-1')] }, [
      { anyApproval: { minApprovals: 1 } },
    ]);
    expect(evaluateGates(plain, NOW).decision).toBe('proceed');
  });

  it('counts every approval of a version whose creator is unknown', () => {
    const facts = releaseFacts(NOW, { approvals: [approval('key-1')] }, [rule]);
    expect(evaluateGates(facts, NOW).decision).toBe('proceed');
  });
});

describe('an approval rule that requires another approver than every key that made the version', () => {
  const rule = { anyApproval: { minApprovals: 1, requireDistinctApprover: true } };

  it('counts neither the creator’s nor an editor’s approval, and counts a third key’s', () => {
    const authors = { versionCreatedBy: 'key-1', versionAuthors: ['key-1', 'key-2'] };
    const edited = releaseFacts(NOW, { ...authors, approvals: [approval('key-2')] }, [rule]);
    const evaluation = evaluateGates(edited, NOW);
    expect(evaluation.decision).toBe('wait');
    expect(evaluation.reason).toBe(
      '0 of 1 approvals; approvals by the keys that created or changed the version do not count',
    );
    const third = releaseFacts(NOW, { ...authors, approvals: [approval('key-2'), approval('key-3')] }, [
      rule,
    ]);
    expect(evaluateGates(third, NOW).decision).toBe('proceed');
  });
});
