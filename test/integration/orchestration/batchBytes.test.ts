import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BATCH_RESOURCE_BYTES, rollOutPendingTargets, rollOutVersionBatch } from '../../../engine/executor';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** Stored bytes of one large resource: random text, so PostgreSQL cannot compress it below this. */
const LARGE_BYTES = 300 * 1024;
const RESOURCES = 7;
/** How many such resources fit in a batch's bytes: three (900 KB of 1 MB). */
const PER_BATCH = Math.floor(BATCH_RESOURCE_BYTES / LARGE_BYTES);

/**
 * A rollout over very large resources takes them a batch's bytes at a time (engine/executor/releaseFanout.ts
 * `BATCH_RESOURCE_BYTES`), so a worker with a capped heap never holds 500 of them at once; every target
 * still gets its release. The batches are called directly, with no worker running.
 */
describe('rollout batches over large resources', () => {
  let stack: TestStack;
  const fork = () => stack.orm.em.fork() as EntityManager;
  let largeDeployment: string;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack?.close());

  it("cuts a workspace's new targets and a version's targets into batches that fit, and misses none", async () => {
    expect(PER_BATCH).toBe(3);
    const api = recordsApi(stack);
    const system = await api.system('Large');
    await api.environment('large-env', 'resource.metadata["pool"] == "large"', system);
    const deployment = await api.deployment('large', system);
    largeDeployment = deployment;
    await api.version(deployment, 'v1', { status: 'ready' });
    for (let n = 0; n < RESOURCES; n++) {
      await api.resource(
        `large-${n}`,
        'service',
        { pool: 'large' },
        {
          config: { blob: randomBytes(LARGE_BYTES / 2).toString('hex') },
        },
      );
    }

    // New targets of a deployment with a ready version: flagged, then taken a batch's bytes at a time.
    const pending: { created: number; more: boolean }[] = [];
    for (let more = true; more;) {
      const batch = await rollOutPendingTargets(fork(), stack.secrets, stack.workspaceId, 500);
      pending.push({ created: batch.created, more: batch.more });
      more = batch.more;
    }
    expect(pending).toEqual([
      { created: 3, more: true },
      { created: 3, more: true },
      { created: 1, more: false },
    ]);

    // A new version over the same targets: batches cut by bytes, the cursor carrying on after each.
    const v2 = await api.version(deployment, 'v2', { status: 'ready' });
    const batches: number[] = [];
    let after: string | undefined;
    do {
      const batch = await rollOutVersionBatch(fork, stack.secrets, v2, after, 500);
      batches.push(batch.created);
      after = batch.next;
    } while (after);
    expect(batches).toEqual([3, 3, 1]);
    const releases = await api.releases(`&versionId=${v2}`);
    expect(releases).toHaveLength(RESOURCES);
  });

  it('runs a batch in two transactions side by side: twice the targets, each one release, complete only at the end', async () => {
    const api = recordsApi(stack);
    // The first test's deployment and its seven targets.
    const v3 = await api.version(largeDeployment, 'v3', { status: 'ready' });
    const statusOf = async () => {
      const [row] = await fork()
        .getConnection()
        .execute(`SELECT rollout_status, rollout_release_count FROM deployment_version WHERE id = ?`, [v3]);
      return row as { rollout_status: string; rollout_release_count: number };
    };
    const batches: number[] = [];
    const statuses: string[] = [];
    let after: string | undefined;
    do {
      const batch = await rollOutVersionBatch(fork, stack.secrets, v3, after, 500, 2);
      batches.push(batch.created);
      statuses.push((await statusOf()).rollout_status);
      after = batch.next;
    } while (after);
    expect(batches).toEqual([2 * PER_BATCH, RESOURCES - 2 * PER_BATCH]);
    expect(statuses).toEqual(['running', 'completed']);
    expect((await statusOf()).rollout_release_count).toBe(RESOURCES);
    const releases = await api.releases(`&versionId=${v3}`);
    expect(new Set(releases.map((r: { resourceId: string }) => r.resourceId)).size).toBe(RESOURCES);
    // Run again from the start, it creates nothing twice.
    expect((await rollOutVersionBatch(fork, stack.secrets, v3, undefined, 500, 2)).created).toBe(0);
  });
});
