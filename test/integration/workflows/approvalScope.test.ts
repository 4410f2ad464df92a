import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { approvalScopeWorkflow } from '../../../workflows/approvalScope';
import { workflowIds } from '../../../workflows/ids';
import { recordAfterEach } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/** The approval scope workflow on its own: it records the scope of the decision it was started for, once. */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

const recordAfterTest = recordAfterEach(() => env.client.workflow);

describe('approvalScopeWorkflow', () => {
  it('records the scope of the approval’s decision, and ends', async () => {
    const calls: [string, number][] = [];
    const activities = {
      async recordApprovalScope(approvalId: string, decision: number) {
        calls.push([approvalId, decision]);
        return { recorded: true, digests: 3, releasesWoken: 2 };
      },
    };
    const approvalId = randomUUID();
    await withWorker(env, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start(approvalScopeWorkflow, {
        taskQueue,
        workflowId: workflowIds.approvalScope(approvalId, 2),
        args: [{ approvalId, decision: 2 }],
      });
      recordAfterTest(handle, 'approval-scope-recorded');
      await handle.result();
    });
    expect(calls).toEqual([[approvalId, 2]]);
  });
});
