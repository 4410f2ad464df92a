import {
  WEBHOOK_ATTEMPT_TIMEOUT_MS,
  WEBHOOK_REQUEST_TIMEOUT_MS,
  WEBHOOK_RETRY,
  webhookRetryDelayAfterNoAnswerMs,
  webhookRetryPauseMs,
} from '../../domain/webhookAttempts';

describe('webhook attempts', () => {
  it('holds a slot no longer than the request timeout and the two steps around it', () => {
    expect(WEBHOOK_ATTEMPT_TIMEOUT_MS).toBeGreaterThan(WEBHOOK_REQUEST_TIMEOUT_MS);
    expect(WEBHOOK_ATTEMPT_TIMEOUT_MS - WEBHOOK_REQUEST_TIMEOUT_MS).toBeLessThanOrEqual(5_000);
  });

  it('pauses as the retry policy does: 1 s, half again each time, at most 10 minutes', () => {
    expect([1, 2, 3].map(webhookRetryPauseMs)).toEqual([1_000, 1_500, 2_250]);
    expect(webhookRetryPauseMs(100)).toBe(WEBHOOK_RETRY.maximumIntervalMs);
  });

  it('starts the next attempt at the same moment whether the connection failed at once or timed out', () => {
    const started = 1_000_000;
    const refusedAtOnce = started + 2 + webhookRetryDelayAfterNoAnswerMs(1, started, started + 2);
    const timedOut =
      started +
      WEBHOOK_REQUEST_TIMEOUT_MS +
      webhookRetryDelayAfterNoAnswerMs(1, started, started + WEBHOOK_REQUEST_TIMEOUT_MS);
    expect(refusedAtOnce).toBe(timedOut);
    expect(refusedAtOnce - started).toBe(WEBHOOK_REQUEST_TIMEOUT_MS + 1_000);
  });
});
