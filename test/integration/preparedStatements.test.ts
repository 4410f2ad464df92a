import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { openDatabase, type Database } from '../../db/database';
import { numberedPlaceholders, preparedStatement, runPrepared } from '../../db/preparedStatements';
import { createTestDatabase, type TestDatabase } from '../helpers/database';

const INSERT_PROBE = preparedStatement(
  'test_insert_probe',
  'INSERT INTO probe (id) VALUES ($1) RETURNING id',
);
const COUNT_PROBES = preparedStatement('test_count_probes', 'SELECT count(*)::int AS n FROM probe');

/** db/preparedStatements.ts: the hot path's statements, inside and outside transactions. */
describe('prepared statements', () => {
  let db: TestDatabase;
  let orm: Database;

  beforeAll(async () => {
    db = await createTestDatabase();
    orm = await openDatabase({ url: db.url, poolMax: 3 });
    await orm.em.getConnection().execute('CREATE TABLE probe (id int PRIMARY KEY)');
  });
  afterAll(async () => {
    await orm.close();
    await db.drop();
  });
  beforeEach(() => orm.em.getConnection().execute('TRUNCATE probe'));

  const em = () => orm.em.fork() as EntityManager;
  const count = async () => (await runPrepared<{ n: number }>(em(), COUNT_PROBES, []))[0]!.n;

  it('runs inside a transaction on its connection: it sees the transaction and rolls back with it', async () => {
    const seen = await em()
      .transactional(async (tx) => {
        await runPrepared(tx, INSERT_PROBE, [1]);
        // A pooled connection of its own would not see the uncommitted row.
        const inside = (await runPrepared<{ n: number }>(tx, COUNT_PROBES, []))[0]!.n;
        throw Object.assign(new Error('roll back'), { inside });
      })
      .catch((error: { inside?: number }) => error.inside);
    expect(seen).toBe(1);
    expect(await count()).toBe(0);
  });

  it('commits with the transaction, and alone outside one', async () => {
    await em().transactional((tx) => runPrepared(tx, INSERT_PROBE, [1]));
    expect(await runPrepared(em(), INSERT_PROBE, [2])).toEqual([{ id: 2 }]);
    expect(await count()).toBe(2);
  });

  it("reports errors as the ORM's, inside a transaction and out", async () => {
    await runPrepared(em(), INSERT_PROBE, [1]);
    await expect(runPrepared(em(), INSERT_PROBE, [1])).rejects.toBeInstanceOf(
      UniqueConstraintViolationException,
    );
    await expect(em().transactional((tx) => runPrepared(tx, INSERT_PROBE, [1]))).rejects.toBeInstanceOf(
      UniqueConstraintViolationException,
    );
    expect(await count()).toBe(1);
  });

  it('replaces a connection whose prepared statement outlived a change of its columns', async () => {
    const single = await openDatabase({ url: db.url, poolMax: 1 });
    try {
      const readAll = preparedStatement('test_read_probes', 'SELECT * FROM probe');
      const read = () => runPrepared(single.em.fork() as EntityManager, readAll, []);
      await runPrepared(single.em.fork() as EntityManager, INSERT_PROBE, [1]);
      expect(await read()).toEqual([{ id: 1 }]);
      await single.em.getConnection().execute('ALTER TABLE probe ADD COLUMN note text');
      await expect(read()).rejects.toThrow(/cached plan must not change result type/);
      expect(await read()).toEqual([{ id: 1, note: null }]);
    } finally {
      await single.close();
    }
  });

  it('numbers the placeholders of a composed statement in order', () => {
    expect(numberedPlaceholders('SELECT ?, ? FROM t WHERE a = ? AND b = ?')).toBe(
      'SELECT $1, $2 FROM t WHERE a = $3 AND b = $4',
    );
  });
});
