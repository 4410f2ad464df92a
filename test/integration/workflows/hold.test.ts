import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { wakeSignal } from '../../../workflows/definitions';
import { holdWorkflow } from '../../../workflows/hold';
import { workflowIds } from '../../../workflows/ids';
import { eventually } from '../../helpers/eventually';
import { recordAfterEach } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/** The hold workflow on its own, its hold's changes scripted: it applies the hold at each, then ends. */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

/** Workflows started by the current test, each recorded as its fixture after it. */
const recordAfterTest = recordAfterEach(() => env.client.workflow);

/** A hold whose next changes are `changes` (ms from each application); after them it changes no more. */
function scriptedHold(changes: number[]) {
  const applied: number[] = [];
  return {
    applied,
    activities: {
      async applyHold() {
        applied.push(Date.now());
        const next = changes.shift();
        return next === undefined ? {} : { nextChangeAt: new Date(Date.now() + next).toISOString() };
      },
    },
  };
}

async function startHold(taskQueue: string, fixture: string, firstChangeMs: number) {
  const holdId = randomUUID();
  const handle = await env.client.workflow.start(holdWorkflow, {
    taskQueue,
    workflowId: workflowIds.hold(holdId),
    args: [
      { workspaceId: randomUUID(), holdId, nextChangeAt: new Date(Date.now() + firstChangeMs).toISOString() },
    ],
  });
  recordAfterTest(handle, fixture);
  return handle;
}

describe('holdWorkflow', () => {
  it('applies the hold at each change its windows bring, and ends when it changes no more', async () => {
    const hold = scriptedHold([800]);
    const begun = Date.now();
    await withWorker(env, hold.activities, async (taskQueue) =>
      (await startHold(taskQueue, 'hold-window-changes', 600)).result(),
    );
    expect(hold.applied).toHaveLength(2);
    expect(hold.applied[0]! - begun).toBeGreaterThanOrEqual(600);
    expect(hold.applied[1]! - hold.applied[0]!).toBeGreaterThanOrEqual(800);
  });

  it('looks at once when its hold is deleted, and ends', async () => {
    const hold = scriptedHold([]);
    await withWorker(env, hold.activities, async (taskQueue) => {
      const handle = await startHold(taskQueue, 'hold-deleted', 3_600_000);
      await eventually(async () => (await handle.describe()).historyLength > 3, {
        what: 'the hold to sleep',
      });
      await handle.signal(wakeSignal);
      await handle.result();
    });
    expect(hold.applied).toHaveLength(1);
  });
});
