import { LeaseTimer } from '../../domain/leaseTimer';

/** The lease workflow's decisions (domain/leaseTimer.ts; docs/design.md "Lease workflow"). */
describe('the lease timer', () => {
  const input = { jobId: 'j1', claimId: 'c1', expiresAt: '2030-01-01T00:01:00.000Z' };
  const now = Date.parse('2030-01-01T00:00:00.000Z');

  it('sleeps on the deadline granted with the claim once, without reading the claim', () => {
    const timer = new LeaseTimer(input, true);
    expect(timer.knowsDeadline).toBe(true);
    expect(timer.untilGrantedDeadline(now)).toEqual({ remainingMs: 60_000 });
    expect(timer.knowsDeadline).toBe(false);
    expect(() => timer.untilGrantedDeadline(now)).toThrow(/no granted deadline/);
  });

  it('counts a granted deadline already past as no time left', () => {
    expect(new LeaseTimer(input, true).untilGrantedDeadline(now + 120_000)).toEqual({ remainingMs: 0 });
  });

  it('reads the claim first when started before deadlines, or without one', () => {
    expect(new LeaseTimer(input, false).knowsDeadline).toBe(false);
    expect(new LeaseTimer({ jobId: 'j1', claimId: 'c1' }, true).knowsDeadline).toBe(false);
  });

  it('sleeps for the claim time left, and ends released when the claim is gone', () => {
    expect(LeaseTimer.afterReading({ remainingMs: 5_000 })).toEqual({ remainingMs: 5_000 });
    expect(LeaseTimer.afterReading(null)).toEqual({ outcome: 'released' });
  });

  it('sleeps while time is left, and sweeps once it ran out', () => {
    expect(LeaseTimer.sleeps(1)).toBe(true);
    expect(LeaseTimer.sleeps(0)).toBe(false);
  });

  it('ends as its sweep says, or looks again when a heartbeat extended the claim', () => {
    expect(LeaseTimer.afterSweep('expired')).toBe('expired');
    expect(LeaseTimer.afterSweep('gone')).toBe('gone');
    expect(LeaseTimer.afterSweep('held')).toBeUndefined();
  });

  it('ends expired after the expiry of leases started before sweeps, or looks again', () => {
    expect(LeaseTimer.afterExpiry(true)).toBe('expired');
    expect(LeaseTimer.afterExpiry(false)).toBeUndefined();
  });

  it('continues as new with the claim alone: the next run reads its deadline', () => {
    expect(new LeaseTimer(input, true).continuedInput).toEqual({ jobId: 'j1', claimId: 'c1' });
  });
});
