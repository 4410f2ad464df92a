import type { JobStatus } from './jobStatus';
import type { PolicyRule } from './policies';
import { MAX_RULE_SECONDS, ruleTimerMs } from './ruleLimits';

/**
 * Ctrlplane's `retry` rule. It is not a gate (docs/behaviour.md "Policy skips"): it acts after an
 * attempt failed, deciding whether the release gets another job and after how long. Pure: the
 * release workflow decides with it.
 */

/** Job statuses a retry rule counts by default (Ctrlplane's defaults). */
function retryCounts(statuses: readonly JobStatus[] | undefined, maxRetries: number): JobStatus[] {
  if (statuses && statuses.length > 0) return [...statuses];
  return maxRetries > 0
    ? ['failure', 'invalid_integration', 'invalid_job_agent']
    : ['failure', 'invalid_integration', 'invalid_job_agent', 'successful'];
}

export interface RetryDecision {
  retry: boolean;
  reason: string;
  /** Wait this long before the next attempt. */
  backoffMs: number;
}

/**
 * After a failed attempt: whether the release tries again. Without a retry rule a release gets one
 * job. With several retry rules the strictest (fewest retries) applies.
 */
export function decideRetry(rules: PolicyRule[], attempts: readonly { status: JobStatus }[]): RetryDecision {
  const retryRules = rules.flatMap((rule) => (rule.retry ? [rule.retry] : []));
  if (retryRules.length === 0)
    return { retry: false, reason: 'no retry rule: one job per release', backoffMs: 0 };
  const rule = retryRules.reduce((strictest, candidate) =>
    candidate.maxRetries < strictest.maxRetries ? candidate : strictest,
  );
  const counted = retryCounts(rule.retryOnStatuses, rule.maxRetries);
  const used = attempts.filter((attempt) => counted.includes(attempt.status)).length;
  if (used > rule.maxRetries) {
    return { retry: false, reason: `${used - 1} of ${rule.maxRetries} retries used`, backoffMs: 0 };
  }
  // Stored durations are bounded where they are used: a rule stored before rules had maxima, or
  // anything that is not a number, never becomes a timer the workflow cannot start.
  const base = ruleTimerMs(rule.backoffSeconds ?? 0);
  const backoff = rule.backoffStrategy === 'exponential' ? base * 2 ** Math.max(0, used - 1) : base;
  // Exponential backoff over 100 retries outgrows any timer: a backoff never exceeds a rule's longest duration.
  const capped = Math.min(backoff, ruleTimerMs(rule.maxBackoffSeconds ?? MAX_RULE_SECONDS));
  return { retry: true, reason: `retry ${used} of ${rule.maxRetries}`, backoffMs: capped };
}
