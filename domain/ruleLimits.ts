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
