import type { EntityManager } from '@mikro-orm/postgresql';
import { refreshStaleStatistics } from '../../../db/plannerStatistics';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * A fan-out's batches analyze the tables they read when the planner's statistics lag far behind
 * their rows (db/plannerStatistics.ts), and only then.
 */
describe('planner statistics before a fan-out', () => {
  let stack: TestStack;
  const fork = () => stack.orm.em.fork() as EntityManager;
  const modifiedSinceAnalyze = async () =>
    (
      await fork().execute<{ n: string }[]>(
        "SELECT n_mod_since_analyze AS n FROM pg_stat_user_tables WHERE relname = 'resource'",
      )
    )[0]!.n;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    // The test's own database: autovacuum must not analyze the table before the function does.
    await fork().execute('ALTER TABLE resource SET (autovacuum_enabled = false)');
  });
  afterAll(() => stack?.close());

  it('analyzes a table of thousands of unanalyzed rows once, and leaves fresh statistics alone', async () => {
    await fork().execute(
      `INSERT INTO resource (id, workspace_id, identifier, name, version, kind)
       SELECT gen_random_uuid(), ?::uuid, 'node-' || n, 'node-' || n, 'v1', 'node'
         FROM generate_series(1, 3000) AS n`,
      [stack.workspaceId],
    );
    // Each backend reports its changes to the statistics within a few seconds.
    const deadline = Date.now() + 20_000;
    while (Number(await modifiedSinceAnalyze()) < 3000 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(Number(await modifiedSinceAnalyze())).toBeGreaterThanOrEqual(3000);

    expect(await refreshStaleStatistics(fork())).toContain('resource');
    const [analyzed] = await fork().execute<{ at: Date | null; rows: number }[]>(
      `SELECT s.last_analyze AS at, c.reltuples AS rows
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'resource'`,
    );
    expect(analyzed!.at).not.toBeNull();
    expect(Number(analyzed!.rows)).toBeGreaterThanOrEqual(3000);
    expect(await refreshStaleStatistics(fork())).not.toContain('resource');
  });
});
