import { setHandler } from '@temporalio/workflow';
import { wakeSignal } from './definitions';
import { LeaseRun } from './leaseRun';
import type { LeaseOutcome, LeaseWorkflowInput } from '../domain/leaseTimer';

export type { LeaseOutcome, LeaseWorkflowInput } from '../domain/leaseTimer';

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
 *
 * This workflow only decides (workflows/leaseRun.ts, with the decisions in domain/leaseTimer.ts);
 * the moves of the claim are the claim lifecycle's (domain/claimLifecycle.ts).
 */
export async function leaseWorkflow(input: LeaseWorkflowInput): Promise<LeaseOutcome> {
  const lease = new LeaseRun(input);
  setHandler(wakeSignal, () => lease.wake());
  return lease.run();
}
