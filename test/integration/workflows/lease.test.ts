import { randomUUID } from 'node:crypto';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { wakeSignal } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import { leaseWorkflow } from '../../../workflows/lease';
import { eventually } from '../../helpers/eventually';
import { recordHistory } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/** The lease workflow on its own, its claim held in memory: expiry, extension by heartbeats, end. */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

/** A claim whose expiry the test moves, as heartbeats would; `expireClaim` fails while it lies ahead. */
function fakeClaim(lifetimeMs: number) {
  const claim = { expiresAt: Date.now() + lifetimeMs, held: true, reads: 0, expired: false };
  return {
    claim,
    activities: {
      async readClaim() {
        claim.reads += 1;
        return claim.held ? { remainingMs: Math.max(0, claim.expiresAt - Date.now()) } : null;
      },
      async expireClaim() {
        if (!claim.held || claim.expiresAt > Date.now()) return false;
        claim.held = false;
        claim.expired = true;
        return true;
      },
    },
  };
}

const started: { handle: WorkflowHandleWithFirstExecutionRunId; fixture: string }[] = [];
afterEach(async () => {
  for (const { handle, fixture } of started.splice(0))
    await recordHistory(env.client.workflow, handle, fixture);
});

async function startLease(taskQueue: string, fixture: string) {
  const input = { jobId: randomUUID(), claimId: randomUUID() };
  const handle = await env.client.workflow.start(leaseWorkflow, {
    taskQueue,
    workflowId: workflowIds.lease(input.jobId, input.claimId),
    args: [input],
  });
  started.push({ handle, fixture });
  return handle;
}

describe('leaseWorkflow', () => {
  it('expires the claim when its time runs out', async () => {
    const { claim, activities } = fakeClaim(1_000);
    const started = Date.now();
    const outcome = await withWorker(env, activities, async (taskQueue) =>
      (await startLease(taskQueue, 'lease-expired')).result(),
    );
    expect(outcome).toBe('expired');
    expect(claim.expired).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  });

  it('sleeps on when a heartbeat moved the expiry, and expires at the new one', async () => {
    const { claim, activities } = fakeClaim(2_000);
    const { outcome, extendedAt } = await withWorker(env, activities, async (taskQueue) => {
      const handle = await startLease(taskQueue, 'lease-extended-expired');
      // Once the lease has read the claim and sleeps, a heartbeat moves the expiry 3 s on.
      await eventually(() => claim.reads === 1, { what: 'the first read of the claim' });
      const extendedAt = Date.now();
      claim.expiresAt = extendedAt + 3_000;
      return { outcome: await handle.result(), extendedAt };
    });
    expect(outcome).toBe('expired');
    expect(Date.now() - extendedAt).toBeGreaterThanOrEqual(3_000);
    expect(claim.reads).toBeGreaterThanOrEqual(2);
  });

  it('ends released when the claim ends after heartbeats moved its expiry', async () => {
    const { claim, activities } = fakeClaim(1_000);
    // Heartbeats move the expiry on; then the agent reports the job, which ends the claim and wakes the lease.
    const heartbeat = setInterval(() => (claim.expiresAt = Date.now() + 1_000), 300);
    const outcome = await withWorker(env, activities, async (taskQueue) => {
      const handle = await startLease(taskQueue, 'lease-extended-released');
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      clearInterval(heartbeat);
      claim.held = false;
      await handle.signal(wakeSignal);
      return handle.result();
    }).finally(() => clearInterval(heartbeat));
    expect(outcome).toBe('released');
    expect(claim.expired).toBe(false);
    expect(claim.reads).toBeGreaterThanOrEqual(2);
  });
});
