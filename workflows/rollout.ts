import {
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { HEARTBEAT_TIMEOUT, wakeSignal } from './definitions';

const BATCH_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' };

const batches = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: BATCH_RETRY,
});

/**
 * A rollout's first batch, run by the worker in the workflow task that starts the rollout: the
 * first jobs of a version (or of new targets) need no trip through the task queue for an activity,
 * which on a busy server is two waits of most of a second each (docs/design.md "Hot path in SQL").
 */
const firstBatch = proxyLocalActivities<Activities>({ startToCloseTimeout: '1 minute', retry: BATCH_RETRY });
const FIRST_BATCH_LOCAL = 'rollout-first-batch-local';
/**
 * How long a version's first call takes batches, in the workflow task that starts the rollout: a
 * version of a few thousand targets is done in it, without the trips through the task queue that a
 * busy worker (a synced inventory's releases starting) stretched to 1.5 s each (bench/fanout.ts, the
 * sync-then-ship sequence); well within the task's timeout, which the SDK extends for a local
 * activity anyway.
 */
const FIRST_CALL_MS = 2_000;

/** Targets per batch: one transaction each (releases, their jobs, their workflows' starts). */
export const ROLLOUT_BATCH_SIZE = 500;
/** Activities (each up to 20 s of batches) per run before continuing as new, so any rollout keeps a short history. */
const ACTIVITIES_PER_RUN = 40;

export interface VersionRolloutInput {
  versionId: string;
  after?: string;
  releaseCount?: number;
}

/**
 * `version-rollout/<versionId>`: a version that became ready gets one release per release target.
 * The HTTP request only records the intent; this workflow executes the fan-out's batches one after the
 * other (engine/executor/releaseFanout.ts), each of which enqueues its releases' workflow starts, and continues
 * as new to keep its history bounded.
 */
export async function versionRolloutWorkflow(input: VersionRolloutInput): Promise<{ releaseCount: number }> {
  let after = input.after;
  let releaseCount = input.releaseCount ?? 0;
  for (let step = 0; ; step++) {
    const local = step === 0 && input.after === undefined && patched(FIRST_BATCH_LOCAL);
    const result = await (local ? firstBatch : batches).rollOutVersionBatches({
      versionId: input.versionId,
      after,
      batchSize: ROLLOUT_BATCH_SIZE,
      ...(local ? { forMs: FIRST_CALL_MS } : {}),
    });
    releaseCount += result.created;
    after = result.next;
    if (!after) return { releaseCount };
    if (step + 1 >= ACTIVITIES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof versionRolloutWorkflow>({ versionId: input.versionId, after, releaseCount });
    }
  }
}

export interface TargetRolloutInput {
  workspaceId: string;
  /** Releases created by earlier runs, when the rollout continued as new. */
  releases?: number;
}

/**
 * `target-rollout/<workspaceId>`: the workspace's new release targets (flagged when they appeared)
 * each get a release of the newest eligible version, in batches. Every `targets.added` message
 * signals it (or starts it again once it has ended), so a burst of resource upserts makes one run
 * that drains them all, and a target flagged while it runs is picked up before it ends.
 */
export async function targetRolloutWorkflow(input: TargetRolloutInput): Promise<{ releases: number }> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  let releases = input.releases ?? 0;
  for (let step = 0; ; step++) {
    woken = false;
    const local = step === 0 && input.releases === undefined && patched(FIRST_BATCH_LOCAL);
    const result = await (local ? firstBatch : batches).rollOutPendingTargets({
      workspaceId: input.workspaceId,
      batchSize: ROLLOUT_BATCH_SIZE,
      ...(local ? { forMs: 0 } : {}),
    });
    releases += result.created;
    if (!result.more && !woken) return { releases };
    if (step + 1 >= ACTIVITIES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof targetRolloutWorkflow>({ workspaceId: input.workspaceId, releases });
    }
  }
}
