import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { wakeSignal } from '../../../workflows/definitions';
import { workflowIds } from '../../../workflows/ids';
import { leaseWorkflow } from '../../../workflows/lease';
import { eventually } from '../../helpers/eventually';
import { recordAfterEach } from '../../helpers/histories';
import { withWorker, workflowEnvironment } from '../../helpers/workflowEnvironment';

/** The lease workflow on its own, its claim held in memory: expiry, extension by heartbeats, end. */

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await workflowEnvironment();
});
afterAll(async () => {
  await env?.teardown();
});

/**
 * A claim whose expiry the test moves, as heartbeats would; a sweep expires it once its time has
 * run out (unless another sweep already did: `sweptElsewhere`). A lease started without its
 * deadline reads the claim first: its lifetime then counts from that read, however long the worker
 * took to start.
 */
function fakeClaim(lifetimeMs: number) {
  const claim = {
    expiresAt: Date.now() + lifetimeMs,
    held: true,
    reads: 0,
    sweeps: 0,
    expired: false,
    sweptElsewhere: false,
  };
  const sweep = async (): Promise<'expired' | 'gone' | 'held'> => {
    claim.sweeps += 1;
    if (!claim.held) return 'gone';
    if (claim.expiresAt > Date.now()) return 'held';
    claim.held = false;
    if (claim.sweptElsewhere) return 'gone';
    claim.expired = true;
    return 'expired';
  };
  return {
    claim,
    activities: {
      async readClaim() {
        if (claim.reads === 0 && claim.sweeps === 0) claim.expiresAt = Date.now() + lifetimeMs;
        claim.reads += 1;
        return claim.held ? { remainingMs: Math.max(0, claim.expiresAt - Date.now()) } : null;
      },
      sweepLapsedClaims: sweep,
      async expireClaim() {
        return (await sweep()) === 'expired';
      },
    },
  };
}

/** Workflows started by the current test, each recorded as its fixture after it. */
const recordAfterTest = recordAfterEach(() => env.client.workflow);

async function startLease(taskQueue: string, fixture: string, expiresAt?: number) {
  const input = {
    jobId: randomUUID(),
    claimId: randomUUID(),
    ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
  };
  const handle = await env.client.workflow.start(leaseWorkflow, {
    taskQueue,
    workflowId: workflowIds.lease(input.jobId, input.claimId),
    args: [input],
  });
  recordAfterTest(handle, fixture);
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
      // Past its first expiry the lease reads the claim again, finds it extended, and sleeps on.
      await eventually(() => claim.reads >= 2, { what: 'the lease to read the extended claim again' });
      clearInterval(heartbeat);
      claim.held = false;
      await handle.signal(wakeSignal);
      return handle.result();
    }).finally(() => clearInterval(heartbeat));
    expect(outcome).toBe('released');
    expect(claim.expired).toBe(false);
    expect(claim.reads).toBeGreaterThanOrEqual(2);
  });

  it('sleeps on the deadline it was started with, then sweeps', async () => {
    const { claim, activities } = fakeClaim(1_000);
    const started = Date.now();
    const outcome = await withWorker(env, activities, async (taskQueue) =>
      (await startLease(taskQueue, 'lease-deadline-swept', claim.expiresAt)).result(),
    );
    expect(outcome).toBe('expired');
    expect(claim.expired).toBe(true);
    // The deadline came with the start: the claim was never read before the sweep.
    expect(claim.reads).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  });

  it('reads the deadline again when a heartbeat moved it, and ends gone when another sweep expired the claim', async () => {
    const { claim, activities } = fakeClaim(1_000);
    const outcome = await withWorker(env, activities, async (taskQueue) => {
      const handle = await startLease(taskQueue, 'lease-deadline-extended-gone', claim.expiresAt);
      // A heartbeat before the first sweep; then another lease's sweep takes the claim.
      claim.expiresAt = Date.now() + 3_000;
      await eventually(() => claim.sweeps === 1, { what: 'the first sweep', timeoutMs: 10_000 });
      claim.sweptElsewhere = true;
      return handle.result();
    });
    expect(outcome).toBe('gone');
    expect(claim.expired).toBe(false);
    expect(claim.reads).toBeGreaterThanOrEqual(1);
  });

  it('ends released when woken after its claim ended', async () => {
    const { claim, activities } = fakeClaim(30_000);
    const outcome = await withWorker(env, activities, async (taskQueue) => {
      const handle = await startLease(taskQueue, 'lease-deadline-released', claim.expiresAt);
      claim.held = false;
      await handle.signal(wakeSignal);
      return handle.result();
    });
    expect(outcome).toBe('released');
    expect(claim.sweeps).toBe(0);
  });
});
