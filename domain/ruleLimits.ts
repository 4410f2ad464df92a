/**
 * Maxima of policy rules, apart from their schemas (domain/policies.ts) so that the release
 * workflow's code can use them without bundling the schemas.
 *
 * Every duration and count has a maximum because the release workflow turns them into timestamps
 * and timers: a cooldown of 1e13 seconds ends past the last date a `Date` can hold, and the
 * workflow task that formats it would fail on every attempt.
 */

/** The longest duration a rule may name, in seconds: a year. */
export const MAX_RULE_SECONDS = 366 * 24 * 3600;
/** The most measurements or thresholds a rule may ask for. */
export const MAX_RULE_COUNT = 1000;

/**
 * A rule's duration in milliseconds, bounded where it is used (a timer, a window's end, a retry's
 * backoff): a value stored before these maxima existed (or anything that is not a number) never
 * reaches `sleep` or a date beyond them, so no stored rule fails a workflow task. Writes keep
 * refusing such values (domain/policies.ts); this is for what is already stored.
 */
export function ruleTimerMs(seconds: number): number {
  return Math.min(Math.max(Number(seconds) || 0, 0), MAX_RULE_SECONDS) * 1000;
}
