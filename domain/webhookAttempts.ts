/**
 * How a webhook delivery's attempts are timed (docs/behaviour.md "Webhooks"): shared by the delivery
 * workflow, which schedules them, and its activity, which sends them.
 */

/** One request, all of it: DNS, connecting, the answer's headers and as much of its body as is read. */
export const WEBHOOK_REQUEST_TIMEOUT_MS = 10_000;

/**
 * An attempt: its request and the two short database steps around it (the delivery read, the attempt
 * logged). Temporal gives up on an attempt no later than the request itself does, so a slow receiver
 * holds a worker's slot for at most this long.
 */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = WEBHOOK_REQUEST_TIMEOUT_MS + 5_000;

/** Pauses between attempts: 1 s, then each half again as long, at most 10 minutes; for two hours in all. */
export const WEBHOOK_RETRY = {
  initialIntervalMs: 1_000,
  backoffCoefficient: 1.5,
  maximumIntervalMs: 10 * 60_000,
  totalMs: 2 * 60 * 60_000,
} as const;

/** The pause after failed attempt `attempt` (1 for the first), as Temporal's retry policy computes it. */
export function webhookRetryPauseMs(attempt: number): number {
  return Math.min(
    WEBHOOK_RETRY.maximumIntervalMs,
    WEBHOOK_RETRY.initialIntervalMs * WEBHOOK_RETRY.backoffCoefficient ** Math.max(0, attempt - 1),
  );
}

/**
 * When to try again after a request that got no answer (a connection refused, reset or timed out, a
 * name that does not resolve), counted from the attempt's start: its whole request timeout, then the
 * pause. A closed port fails in a millisecond and a filtered one at the timeout; timed this way, the
 * next attempt starts at the same moment for both, so the log's attempt times cannot tell them apart.
 */
export function webhookRetryDelayAfterNoAnswerMs(attempt: number, startedAt: number, now: number): number {
  return Math.max(0, startedAt + WEBHOOK_REQUEST_TIMEOUT_MS - now) + webhookRetryPauseMs(attempt);
}
