import { cancelledJobMoveRefusal } from '../../domain/claimLifecycle';

describe('a job whose cancel was asked', () => {
  it('is never given back to the queue, before its deadline or after', () => {
    expect(cancelledJobMoveRefusal('queued', false)).toMatch(/not given back to the queue/);
    expect(cancelledJobMoveRefusal('queued', true)).toMatch(/not given back to the queue/);
  });

  it('may report how it ended before its deadline', () => {
    for (const status of ['successful', 'failure', 'cancelled', 'action_required'] as const)
      expect(cancelledJobMoveRefusal(status, false)).toBeUndefined();
  });

  it('may only end cancelled or failure once its deadline has passed', () => {
    expect(cancelledJobMoveRefusal('cancelled', true)).toBeUndefined();
    expect(cancelledJobMoveRefusal('failure', true)).toBeUndefined();
    for (const status of ['successful', 'in_progress', 'action_required'] as const)
      expect(cancelledJobMoveRefusal(status, true)).toBe(
        'its cancel deadline has passed: it may only end cancelled or failure',
      );
  });
});
