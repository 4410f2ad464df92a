import type { EntityManager } from '@mikro-orm/postgresql';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface BoardState {
  newest_release_id: string | null;
  newest_version_id: string | null;
  newest_phase: string | null;
  current_version_id: string | null;
}

/**
 * What the rollout board reads of a target is kept on its state row as releases are inserted and
 * move (db/migrations/Migration0025NewestRelease.ts): its newest release is the release of its
 * newest version by creation, whatever order the releases come in, with that release's phase; its
 * current version is its current release's.
 */
describe("a target's newest release, kept for the board", () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack?.close());

  const state = async (deploymentId: string): Promise<BoardState> => {
    const rows = await (stack.orm.em.fork() as EntityManager).execute<BoardState[]>(
      `SELECT newest_release_id, newest_version_id, newest_phase, current_version_id
         FROM release_target_state WHERE deployment_id = ?`,
      [deploymentId],
    );
    expect(rows).toHaveLength(1);
    return rows[0]!;
  };

  it('follows the newest version, not the newest release, and each phase it moves through', async () => {
    const api = recordsApi(stack);
    await api.agent('newest-runner', 'test-runner', { status: 'successful' });
    const system = await api.system('Newest');
    await api.environment('newest-env', 'resource.metadata["pool"] == "newest"', system);
    await api.resource('newest-1', 'service', { pool: 'newest' });
    const deployment = await api.deployment('newest', system, { jobAgents: [{ ref: 'newest-runner' }] });
    await api.policy({
      name: 'approve newest',
      selector: 'deployment.slug == "newest"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });

    // An older version still building, a newer one ready: the newer one's release waits for approval.
    const older = await api.version(deployment, '1.0.0', { status: 'building' });
    const newer = await api.version(deployment, '2.0.0');
    const newerRelease = await api.releaseWith((r) => r.versionId === newer, 'the newer release');
    expect(await state(deployment)).toEqual({
      newest_release_id: newerRelease.id,
      newest_version_id: newer,
      newest_phase: 'pending',
      current_version_id: null,
    });

    // The older version becomes ready later: its release is newer, the target's newest stays 2.0.0.
    await api.send('patch', `/deploymentversions/${older}`, { status: 'ready' }, [202]);
    await api.releaseWith((r) => r.versionId === older, 'the older release');
    expect((await state(deployment)).newest_release_id).toBe(newerRelease.id);

    // Approved, 2.0.0 runs and succeeds: the newest release's phase follows, and it is current.
    await api.send('post', `/releases/${newerRelease.id}/approve`, {}, [202]);
    await eventually(
      async () => ((await state(deployment)).newest_phase === 'succeeded' ? true : undefined),
      { what: 'the newest release to succeed', timeoutMs: 30_000 },
    );
    expect(await state(deployment)).toEqual({
      newest_release_id: newerRelease.id,
      newest_version_id: newer,
      newest_phase: 'succeeded',
      current_version_id: newer,
    });
  });
});
