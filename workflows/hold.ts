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
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

export interface HoldWorkflowInput {
  workspaceId: string;
  holdId: string;
  /** When the hold first changes by itself (a freeze window opens or closes, it expires). */
  nextChangeAt: string;
}

/**
 * `hold/<holdId>`: the durable clock of a hold that changes by itself (docs/behaviour.md "Holds and
 * freezes"). The request that created the hold applied it; this sleeps until the next change, then
 * applies it again (queued jobs held back or let go, covered releases woken, a pin's targets moved)
 * and sleeps on, until the hold has expired or is deleted (the delete wakes it).
 */
export async function holdWorkflow(input: HoldWorkflowInput): Promise<void> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  let nextChangeAt: string | undefined = input.nextChangeAt;
  while (nextChangeAt !== undefined) {
    if (workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof holdWorkflow>({ ...input, nextChangeAt });
    await condition(() => woken, Math.max(1, Date.parse(nextChangeAt) - Date.now()));
    woken = false;
    nextChangeAt = (await steps.applyHold(input.workspaceId, input.holdId)).nextChangeAt;
  }
}
