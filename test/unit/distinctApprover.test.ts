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

describe('an approval rule that requires another approver than the version’s creator (issue 27 §5)', () => {
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
