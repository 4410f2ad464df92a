import { condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { wakeSignal } from './definitions';
import { databaseSteps } from './steps';

export interface RolloutWavesInput {
  workspaceId: string;
  rolloutId: string;
}

/**
 * `rollout-waves/<rolloutId>`: the durable clock of a version's rollout in waves (docs/behaviour.md
 * "Rolling out to a fleet"). Each step advances it as its counts stand (engine/executor/rollouts.ts:
 * a halt, the next targets admitted); between steps it sleeps until a bake ends or something wakes
 * it (a member ended, an operator paused, resumed or aborted it). Wakes that arrive during a step
 * coalesce into one more step. It ends when every wave has ended or the rollout was aborted.
 */
export async function rolloutWavesWorkflow(input: RolloutWavesInput): Promise<void> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  for (;;) {
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof rolloutWavesWorkflow>(input);
    woken = false;
    const { done, nextChangeAt } = await databaseSteps.advanceRollout(input.rolloutId);
    if (done) return;
    if (nextChangeAt) await condition(() => woken, Math.max(1, Date.parse(nextChangeAt) - Date.now()));
    else await condition(() => woken);
  }
}
