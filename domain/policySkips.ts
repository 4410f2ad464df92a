import { ValidationError } from './errors';
import type { RuleKind } from './ruleKinds';

/**
 * Policy skips (docs/behaviour.md "Policy skips"): a named person lets the releases of one version
 * pass one policy rule on a scope (an environment, a resource, or every target of the version) until
 * the skip expires. Only gates can be skipped: the rules a release waits at.
 */

/** The rule kinds a release waits at, each evaluated per rule (so a skip names one). */
export const SKIPPABLE_RULE_KINDS: readonly RuleKind[] = [
  'anyApproval',
  'environmentProgression',
  'deploymentDependency',
  'deploymentWindow',
  'versionCooldown',
  'gradualRollout',
  'planValidationOpa',
];

/** A skip as a release's gates read it (recorded in the release workflow's history). */
/**
 * Unexpired skips a workspace may have at once: each one wakes every waiting release of its version
 * when written, and every release's gates read them, so their number is bounded like holds'.
 */
export const MAX_ACTIVE_SKIPS_PER_WORKSPACE = 100;

export interface SkipFact {
  id: string;
  ruleId: string;
  reason: string;
  expiresAt: string;
  createdBy: { id: string; name: string };
}

/** How long a skip may live: the default when the request names no expiry, and the most it may ask. */
export interface SkipLifetimes {
  defaultSeconds: number;
  maxSeconds: number;
}

export const DEFAULT_SKIP_LIFETIMES: SkipLifetimes = { defaultSeconds: 24 * 3600, maxSeconds: 7 * 24 * 3600 };

/** The skip's expiry: the requested one if it is in the future and within the maximum (400 otherwise). */
export function skipExpiry(requested: string | undefined, now: Date, lifetimes: SkipLifetimes): Date {
  if (requested === undefined) return new Date(now.getTime() + lifetimes.defaultSeconds * 1000);
  const at = new Date(requested);
  const problem =
    at.getTime() <= now.getTime()
      ? 'must be in the future'
      : at.getTime() - now.getTime() > lifetimes.maxSeconds * 1000
        ? `must be within ${lifetimes.maxSeconds} seconds from now`
        : null;
  if (problem)
    throw new ValidationError(`expiresAt ${problem}`, [{ path: 'body.expiresAt', message: problem }]);
  return at;
}

/** The skip that passes rule `ruleId` at `now`, if any: the one that lasts longest. */
export function activeSkip(
  skips: readonly SkipFact[] | undefined,
  ruleId: string,
  now: Date,
): SkipFact | undefined {
  return (skips ?? [])
    .filter((skip) => skip.ruleId === ruleId && Date.parse(skip.expiresAt) > now.getTime())
    .sort((a, b) => Date.parse(b.expiresAt) - Date.parse(a.expiresAt))[0];
}

/** What explain and the history say of a rule passed by a skip. */
export function skippedReason(skip: SkipFact): string {
  return `skipped by ${skip.createdBy.name} until ${skip.expiresAt}: ${skip.reason}`;
}
