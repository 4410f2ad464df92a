import type { JobStatus } from './jobStatus';
import type { PolicyRule } from './policies';

/**
 * Rollback (docs/behaviour.md "Rollback"): whether a failed release's target goes back to its
 * previous successful release, and what the failed release then says. Pure: the engine reads the
 * facts and does what this decides.
 */

export interface RollbackFacts {
  /** The rules of the policies that apply to the failed release's target. */
  rules: readonly PolicyRule[];
  /** Its last job's status, and whether a verification of that job failed. */
  lastJob: { status: JobStatus; verificationFailed: boolean } | null;
  /** The failed release was itself a rollback: it never rolls back again. */
  wasRollback: boolean;
  /** The target's current release (its last success), with its version's tag; null when none. */
  previous: { releaseId: string; tag: string } | null;
}

export type RollbackDecision =
  | { kind: 'none' }
  | { kind: 'rollBack'; to: { releaseId: string; tag: string }; why: string }
  /** A rule asked for a rollback that cannot happen: the failed release says why. */
  | { kind: 'refused'; note: string };

export function decideRollback(facts: RollbackFacts): RollbackDecision {
  const why = triggeringCause(facts);
  if (!why) return { kind: 'none' };
  if (facts.wasRollback)
    return { kind: 'refused', note: 'not rolled back: this release was itself a rollback' };
  if (!facts.previous)
    return { kind: 'refused', note: 'nothing to roll back to: no earlier release succeeded here' };
  return { kind: 'rollBack', to: facts.previous, why };
}

/** What in the failure matches a rollback rule, said as the cause; undefined when nothing does. */
function triggeringCause(facts: RollbackFacts): string | undefined {
  const job = facts.lastJob;
  if (!job) return undefined;
  for (const rule of facts.rules) {
    if (!rule.rollback) continue;
    if (rule.rollback.onJobStatuses?.includes(job.status)) return `its job ended ${job.status}`;
    if (rule.rollback.onVerificationFailure && job.verificationFailed) return 'its verification failed';
  }
  return undefined;
}
