import { sleep } from '@temporalio/workflow';

/** The floor of the fan-out benchmark: a workflow that does nothing, started and completed once per target. */
export async function floorWorkflow(): Promise<void> {}

/** The floor of the reaper benchmark: a workflow that waits on a durable timer until `untilMs`, then ends. */
export async function timerFloorWorkflow(untilMs: number): Promise<void> {
  await sleep(Math.max(0, untilMs - Date.now()));
}
