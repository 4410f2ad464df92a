import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import { HEARTBEAT_TIMEOUT } from './definitions';

const { rollOutVersionBatch, rollOutTargets, recordRollout } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Targets per batch: one transaction and one burst of workflow starts each. */
export const ROLLOUT_BATCH_SIZE = 500;
/** Batches per run before continuing as new, so a rollout to any number of targets keeps a short history. */
const BATCHES_PER_RUN = 40;

export interface VersionRolloutInput {
  versionId: string;
  after?: string;
  releaseCount?: number;
}

/**
 * `version-rollout/<versionId>`: a version that became ready gets one release per release target,
 * each with its own workflow. The HTTP request only records the intent; this workflow does the
 * fan-out in batches, and continues as new to keep its history bounded.
 */
export async function versionRolloutWorkflow(input: VersionRolloutInput): Promise<{ releaseCount: number }> {
  let after = input.after;
  let releaseCount = input.releaseCount ?? 0;
  for (let batch = 0; ; batch++) {
    const result = await rollOutVersionBatch({
      versionId: input.versionId,
      after,
      batchSize: ROLLOUT_BATCH_SIZE,
    });
    releaseCount += result.releases;
    after = result.next;
    await recordRollout({ versionId: input.versionId, releaseCount, completed: !after });
    if (!after) return { releaseCount };
    if (batch + 1 >= BATCHES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof versionRolloutWorkflow>({ versionId: input.versionId, after, releaseCount });
    }
  }
}

/** `target-rollout/<batchId>`: new release targets each get a release of the newest eligible version. */
export async function targetRolloutWorkflow(input: {
  workspaceId: string;
  targets: ReleaseTargetRef[];
}): Promise<{ releases: number }> {
  return rollOutTargets(input);
}
