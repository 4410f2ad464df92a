import type { PolicyRule } from '../../domain/policies';
import { decideRollback, type RollbackFacts } from '../../domain/rollback';

const rule = (rollback: NonNullable<PolicyRule['rollback']>): PolicyRule => ({ id: 'r1', rollback });
const facts = (overrides: Partial<RollbackFacts>): RollbackFacts => ({
  rules: [rule({ onJobStatuses: ['failure'] })],
  lastJob: { status: 'failure', verificationFailed: false },
  wasRollback: false,
  previous: { releaseId: 'p1', tag: '1.0.0' },
  ...overrides,
});

describe('decideRollback (docs/behaviour.md "Rollback")', () => {
  it('rolls back to the previous success when the last job ended in a listed status', () => {
    expect(decideRollback(facts({}))).toEqual({
      kind: 'rollBack',
      to: { releaseId: 'p1', tag: '1.0.0' },
      why: 'its job ended failure',
    });
  });

  it('rolls back on a failed verification only where the rule asks', () => {
    const verified = { status: 'successful' as const, verificationFailed: true };
    expect(decideRollback(facts({ lastJob: verified })).kind).toBe('none');
    expect(
      decideRollback(facts({ lastJob: verified, rules: [rule({ onVerificationFailure: true })] })),
    ).toMatchObject({ kind: 'rollBack', why: 'its verification failed' });
  });

  it('does nothing without a matching rule or a job', () => {
    expect(decideRollback(facts({ lastJob: { status: 'cancelled', verificationFailed: false } })).kind).toBe(
      'none',
    );
    expect(
      decideRollback(facts({ rules: [{ id: 'r2', retry: { maxRetries: 1 } } as PolicyRule] })).kind,
    ).toBe('none');
    expect(decideRollback(facts({ lastJob: null })).kind).toBe('none');
  });

  it('never rolls back a rollback, and says when there is nothing to go back to', () => {
    expect(decideRollback(facts({ wasRollback: true }))).toEqual({
      kind: 'refused',
      note: 'not rolled back: this release was itself a rollback',
    });
    expect(decideRollback(facts({ previous: null }))).toEqual({
      kind: 'refused',
      note: 'nothing to roll back to: no earlier release succeeded here',
    });
  });
});
