import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { RolloutAdvance } from '../../../domain/activityResults';
import { wakeSignal } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import { rolloutWavesWorkflow } from '../../../workflows/rolloutWaves';
import { eventually } from '../../helpers/eventually';
import { recordAfterEach } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/**
 * The waves workflow on its own, its rollout's steps scripted: it sleeps until a bake ends or a
 * wake, advances the rollout at each, and ends when the rollout is done.
 */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

const recordAfterTest = recordAfterEach(() => env.client.workflow);

/** A rollout whose steps answer `steps` in turn (a bake's end as ms from the step). */
function scriptedRollout(steps: ({ bakeMs: number } | 'waits' | 'done')[]) {
  const advanced: number[] = [];
  return {
    advanced,
    activities: {
      async advanceRollout(): Promise<RolloutAdvance> {
        advanced.push(Date.now());
        const step = steps.shift() ?? 'done';
        if (step === 'done') return { done: true };
        if (step === 'waits') return { done: false };
        return { done: false, nextChangeAt: new Date(Date.now() + step.bakeMs).toISOString() };
      },
    },
  };
}

async function startRollout(taskQueue: string, fixture: string) {
  const rolloutId = randomUUID();
  const handle = await env.client.workflow.start(rolloutWavesWorkflow, {
    taskQueue,
    workflowId: workflowIds.rolloutWaves(rolloutId),
    args: [{ workspaceId: randomUUID(), rolloutId }],
  });
  recordAfterTest(handle, fixture);
  return handle;
}

describe('rolloutWavesWorkflow', () => {
  it('advances the rollout when a bake ends, and ends when the rollout is done', async () => {
    const rollout = scriptedRollout([{ bakeMs: 700 }, 'done']);
    await withWorker(env, rollout.activities, async (taskQueue) =>
      (await startRollout(taskQueue, 'rollout-waves-baked')).result(),
    );
    expect(rollout.advanced).toHaveLength(2);
    expect(rollout.advanced[1]! - rollout.advanced[0]!).toBeGreaterThanOrEqual(700);
  });

  it('sleeps without a deadline until a member ends or an operator acts, then advances again', async () => {
    const rollout = scriptedRollout(['waits', 'waits', 'done']);
    await withWorker(env, rollout.activities, async (taskQueue) => {
      const handle = await startRollout(taskQueue, 'rollout-waves-woken');
      for (const steps of [1, 2]) {
        await eventually(async () => (rollout.advanced.length === steps ? true : undefined), {
          what: `step ${steps} of the rollout`,
        });
        await handle.signal(wakeSignal);
      }
      await handle.result();
    });
    expect(rollout.advanced).toHaveLength(3);
  });
});
