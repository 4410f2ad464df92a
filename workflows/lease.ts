import {
  condition,
  continueAsNew,
  patched,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { wakeSignal } from './definitions';

const steps = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** Leases started with their deadline sleep on it at once, without reading the claim first. */
const DEADLINE_FROM_START = 'lease-deadline-from-start';
/** A lease whose time ran out expires every lapsed claim, its own among them, in one statement. */
const SWEEP = 'lease-sweeps-lapsed-claims';
/**
 * A wake is cleared when it is acted on, not at the top of each round: a wake that came with the
 * first task (a report right after the claim) was otherwise cleared before the lease slept, and the
 * lease slept until the deadline and ended `gone` instead of `released`.
 */
const WAKE_KEPT = 'lease-wake-kept-until-acted-on';

export interface LeaseWorkflowInput {
  jobId: string;
  claimId: string;
  /** The claim's end when it was granted, by the database's clock (absent after continue-as-new). */
  expiresAt?: string;
}

/**
 * `released`: the claim ended (a report, a requeue, a cancel) and woke the lease; `expired`: this
 * lease's sweep expired it; `gone`: when its time ran out the claim had already ended (another
 * lease's sweep expired it, or it ended while this lease was not yet running).
 */
export type LeaseOutcome = 'released' | 'expired' | 'gone';

/**
 * `lease/<jobId>/<claimId>`: the reaper of one claim (docs/design.md "Lease workflow"), a durable timer
 * instead of a periodic sweep. Started (through the outbox, trailing the claim) with the claim's deadline, it
 * sleeps until then. Heartbeats move the deadline in the database without telling it: when the
 * timer runs out it sweeps — every claim whose deadline has passed is expired in one statement,
 * its own and those of leases whose timers have not fired yet or whose workflows have not started
 * (docs/agents.md "Writing your own agent", leases) — and if its own claim was extended meanwhile, it reads
 * the deadline again and sleeps on. Expiry deletes the claim and returns the job to the queue, fenced
 * by the claim id, so a late timer never touches a newer claim. A terminal status or a requeue
 * deletes the claim and wakes it, and it ends.
 */
export async function leaseWorkflow(input: LeaseWorkflowInput): Promise<LeaseOutcome> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  let deadline = input.expiresAt !== undefined && patched(DEADLINE_FROM_START) ? input.expiresAt : undefined;
  for (;;) {
    if (!patched(WAKE_KEPT)) woken = false;
    let remainingMs: number;
    if (deadline !== undefined) {
      remainingMs = Math.max(0, Date.parse(deadline) - Date.now());
      deadline = undefined;
    } else {
      const claim = await steps.readClaim(input.jobId, input.claimId);
      if (!claim) return 'released';
      remainingMs = claim.remainingMs;
    }
    if (remainingMs > 0) {
      // A job that heartbeats for days would grow the history without bound; start afresh instead.
      if (workflowInfo().continueAsNewSuggested)
        await continueAsNew<typeof leaseWorkflow>({ jobId: input.jobId, claimId: input.claimId });
      if (await condition(() => woken, remainingMs)) {
        woken = false;
        continue;
      }
    }
    if (patched(SWEEP)) {
      const verdict = await steps.sweepLapsedClaims(input.jobId, input.claimId);
      if (verdict !== 'held') return verdict;
    } else if (await steps.expireClaim(input.jobId, input.claimId)) {
      return 'expired';
    }
  }
}
