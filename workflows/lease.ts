import {
  condition,
  continueAsNew,
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

export interface LeaseWorkflowInput {
  jobId: string;
  claimId: string;
}

export type LeaseOutcome = 'released' | 'expired';

/**
 * `lease/<jobId>/<claimId>`: the reaper of one claim (phase V2), a durable timer instead of a
 * periodic sweep. It sleeps until the claim's stored expiry, as the database's clock counts it.
 * Heartbeats move that expiry without telling it: when the timer runs out it tries to expire the
 * claim, which fails if a heartbeat came, and then it reads the claim again and sleeps on. Expiry
 * deletes the claim and returns the job to the queue, fenced by the claim id, so a late timer never
 * touches a newer claim. A terminal status or a requeue deletes the claim and wakes it, and it ends.
 */
export async function leaseWorkflow(input: LeaseWorkflowInput): Promise<LeaseOutcome> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  for (;;) {
    woken = false;
    const claim = await steps.readClaim(input.jobId, input.claimId);
    if (!claim) return 'released';
    if (claim.remainingMs > 0) {
      // A job that heartbeats for days would grow the history without bound; start afresh instead.
      if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof leaseWorkflow>(input);
      if (await condition(() => woken, claim.remainingMs)) continue;
    }
    // The timer ran out: expire the claim at once, unless a heartbeat moved it (then read it again).
    if (await steps.expireClaim(input.jobId, input.claimId)) return 'expired';
  }
}
