import type { Response } from 'supertest';
import {
  describeOperation,
  type Duplicate,
  type Operation,
  OPERATIONS,
  type RecordKind,
  type Records,
  REQUIRED_FIELDS,
  type Ref,
  refsOf,
  send,
} from '../../helpers/recordContract';
import { databaseDigest, readBack, seedRecords } from '../../helpers/recordSeeds';
import { createOtherWorkspace, expectProblem, type WorkspaceAccess } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * The contract every operation on workspace records keeps, generated from the table in
 * test/helpers/recordContract.ts (one row per operation; the records it names: test/helpers/recordSeeds.ts):
 * without a key 401; naming another workspace's record, or in another workspace, 404 (as an unknown id);
 * taking another record's unique name, slug, tag, identifier or key 409 — each with a problem+json body, and
 * with no table of the database changed. The controls show each row's request, sent with the key on one's own
 * records, succeeds, answers every field the specification requires of the records it answers, and writes its tables: the refusals are not answers to a malformed request or a path
 * that does not exist.
 */
/** Every record an answer holds (itself, or a page's items) has each field its kind requires. */
function expectRequiredFields(kind: RecordKind, body: { items?: Record<string, unknown>[] }): void {
  const records = body.items ?? [body as Record<string, unknown>];
  expect(records.length).toBeGreaterThan(0);
  for (const record of records) {
    const missing = REQUIRED_FIELDS[kind].filter((field) => !(field in record));
    expect({ kind, id: record.id, missing }).toEqual({ kind, id: record.id, missing: [] });
  }
}

describe('the contract of the records endpoints', () => {
  let stack: TestStack;
  let me: WorkspaceAccess;
  let other: WorkspaceAccess;
  let mine: Records;
  let theirs: Records;

  /** Sends the request, checks the problem it answers, and that no table changed. */
  async function expectRefused(
    request: () => PromiseLike<Response>,
    status: number,
    code: string,
  ): Promise<Response> {
    const before = await databaseDigest(stack);
    const res = await request();
    expect(await databaseDigest(stack)).toEqual(before);
    expectProblem(res, status, code);
    return res;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    me = { id: stack.workspaceId, auth: stack.auth };
    other = await createOtherWorkspace(stack);
    mine = await seedRecords(stack, me);
    theirs = await seedRecords(stack, other);
  });
  afterAll(() => stack.close());

  describe('401 without a key', () => {
    let myReads: unknown[];
    beforeAll(async () => {
      myReads = await readBack(stack, me, mine);
    });

    it.each(OPERATIONS.map((op): [string, Operation] => [describeOperation(op), op]))(
      '%s answers 401 and writes nothing',
      async (_, op) => {
        await expectRefused(() => send(stack, op, mine, mine.workspaceId), 401, 'unauthenticated');
      },
    );

    it('leaves my records as they were', async () => {
      expect(await readBack(stack, me, mine)).toEqual(myReads);
    });
  });

  describe("404 for another workspace's records", () => {
    let theirReads: unknown[];
    beforeAll(async () => {
      theirReads = await readBack(stack, other, theirs);
    });

    /**
     * Each record the operation names taken from their workspace in turn (the rest mine), then all of them
     * at once where it names several; and the whole request in their workspace.
     */
    type Case = [what: string, op: Operation, foreign: Ref[] | 'their workspace'];
    const cases = OPERATIONS.flatMap((op): Case[] => {
      const refs = op.foreignRefs ?? refsOf(op);
      const named = (foreign: Ref[]): Case => [
        `${describeOperation(op)} naming their ${foreign.join(' and ')}`,
        op,
        foreign,
      ];
      return [
        ...refs.map((ref) => named([ref])),
        ...(refs.length > 1 ? [named(refs)] : []),
        ...(op.path.startsWith('/v1')
          ? []
          : [[`${describeOperation(op)} in their workspace`, op, 'their workspace'] as Case]),
      ];
    });

    it.each(cases)('%s answers 404 and writes nothing', async (_, op, foreign) => {
      const inTheirs = foreign === 'their workspace';
      const records = inTheirs
        ? theirs
        : { ...mine, ...Object.fromEntries(foreign.map((ref) => [ref, theirs[ref]])) };
      await expectRefused(
        () => send(stack, op, records, inTheirs ? theirs.workspaceId : mine.workspaceId, me.auth),
        404,
        'not_found',
      );
    });

    it('leaves their records as they were', async () => {
      expect(await readBack(stack, other, theirs)).toEqual(theirReads);
    });
  });

  describe('409 for a duplicate', () => {
    let myReads: unknown[];
    beforeAll(async () => {
      myReads = await readBack(stack, me, mine);
    });

    const cases = OPERATIONS.flatMap((op) =>
      (op.duplicates ?? []).map((duplicate): [string, Operation, Duplicate] => [
        `${describeOperation(op)} with a taken ${duplicate.what}`,
        op,
        duplicate,
      ]),
    );

    it.each(cases)('%s answers 409 and writes nothing', async (_, op, duplicate) => {
      const res = await expectRefused(
        () => send(stack, { ...op, body: duplicate.body }, mine, mine.workspaceId, me.auth),
        409,
        duplicate.code,
      );
      expect(res.body.detail).toContain(duplicate.detail(mine));
    });

    it('leaves my records as they were', async () => {
      expect(await readBack(stack, me, mine)).toEqual(myReads);
    });
  });

  describe('controls: with the key, on its own records', () => {
    it.each(OPERATIONS.map((op): [string, Operation] => [describeOperation(op), op]))(
      '%s succeeds and writes its tables (a read: none)',
      async (_, op) => {
        const records = await seedRecords(stack, me);
        const before = await databaseDigest(stack);
        const res = await send(stack, op, records, records.workspaceId, me.auth);
        expect({ status: res.status, body: res.body }).toMatchObject({ status: op.status });
        if (op.answers) expectRequiredFields(op.answers, res.body);
        const after = await databaseDigest(stack);
        if (op.writes.length === 0) expect(after).toEqual(before);
        for (const table of op.writes) {
          expect({ table, changed: after[table] !== before[table] }).toEqual({ table, changed: true });
        }
      },
    );
  });
});
