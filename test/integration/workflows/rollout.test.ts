import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { wakeSignal } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import {
  ROLLOUT_BATCH_SIZE,
  targetRolloutWorkflow,
  versionRolloutWorkflow,
} from '../../../workflows/rollout';
import { recordHistory } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/** The rollout workflows on their own, with batch activities that count: batching and continue-as-new. */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

describe('versionRolloutWorkflow', () => {
  it('takes the batches in order from the cursor, continuing as new every 40 activities', async () => {
    const batches = 45;
    const cursors: (string | undefined)[] = [];
    const activities = {
      async rollOutVersionBatches(input: { versionId: string; after?: string; batchSize: number }) {
        expect(input.batchSize).toBe(ROLLOUT_BATCH_SIZE);
        cursors.push(input.after);
        const n = input.after ? Number(input.after) : 0;
        return { created: 10, next: n + 1 < batches ? String(n + 1) : undefined };
      },
    };
    const versionId = randomUUID();
    const { result, continued } = await withWorker(env, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start(versionRolloutWorkflow, {
        taskQueue,
        workflowId: workflowIds.versionRollout(versionId),
        args: [{ versionId }],
      });
      const result = await handle.result();
      await recordHistory(env.client.workflow, handle, 'version-rollout-continued-as-new');
      // The run that ended has another id than the first one when the workflow continued as new.
      return { result, continued: (await handle.describe()).runId !== handle.firstExecutionRunId };
    });
    expect(result).toEqual({ releaseCount: batches * 10 });
    expect(cursors).toEqual([undefined, ...Array.from({ length: batches - 1 }, (_, i) => String(i + 1))]);
    expect(continued).toBe(true);
  });
});

describe('targetRolloutWorkflow', () => {
  it('drains the pending targets, and looks again when woken while it runs', async () => {
    let pending = 3;
    let calls = 0;
    let handle: Awaited<ReturnType<typeof env.client.workflow.start<typeof targetRolloutWorkflow>>>;
    const activities = {
      async rollOutPendingTargets() {
        calls += 1;
        if (calls === 3) {
          // New targets flagged while the last batch runs: the wake makes one more look.
          pending += 1;
          await handle.signal(wakeSignal);
        }
        const created = Math.min(pending, 1);
        pending -= created;
        return { created, more: calls < 3 };
      },
    };
    const workspaceId = randomUUID();
    const result = await withWorker(env, activities, async (taskQueue) => {
      handle = await env.client.workflow.start(targetRolloutWorkflow, {
        taskQueue,
        workflowId: workflowIds.targetRollout(workspaceId),
        args: [{ workspaceId }],
      });
      const result = await handle.result();
      await recordHistory(env.client.workflow, handle, 'target-rollout-woken');
      return result;
    });
    expect(calls).toBe(4);
    expect(result).toEqual({ releases: 4 });
    expect(pending).toBe(0);
  });

  it('continues as new every 40 batches, counting the releases of every run', async () => {
    const batches = 45;
    let calls = 0;
    const activities = {
      async rollOutPendingTargets() {
        calls += 1;
        return { created: 2, more: calls < batches };
      },
    };
    const workspaceId = randomUUID();
    const { result, continued } = await withWorker(env, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start(targetRolloutWorkflow, {
        taskQueue,
        workflowId: workflowIds.targetRollout(workspaceId),
        args: [{ workspaceId }],
      });
      const result = await handle.result();
      await recordHistory(env.client.workflow, handle, 'target-rollout-continued-as-new');
      return { result, continued: (await handle.describe()).runId !== handle.firstExecutionRunId };
    });
    expect(result).toEqual({ releases: batches * 2 });
    expect(continued).toBe(true);
  });
});
