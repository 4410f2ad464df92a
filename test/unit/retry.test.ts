import type { PolicyRule } from '../../domain/policies';
import { decideRetry } from '../../domain/retry';
import { MAX_RULE_SECONDS } from '../../domain/ruleLimits';

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
