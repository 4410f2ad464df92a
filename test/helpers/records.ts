import type { EntityManager } from '@mikro-orm/postgresql';
import type { Response } from 'supertest';
import { ApiKeyStore } from '../../application/apiKeys';
import { WorkspaceStore } from '../../application/workspaces';
import type { TestStack } from './stack';

/** Helpers for the HTTP tests of workspace records. */

export interface WorkspaceAccess {
  id: string;
  auth: { 'x-api-key': string };
}

/** A second workspace with its own key, for checking that ids do not cross workspaces. */
export async function createOtherWorkspace(stack: TestStack, name = 'Other team'): Promise<WorkspaceAccess> {
  const em = stack.orm.em.fork() as EntityManager;
  const workspace = await new WorkspaceStore(em).create({ name });
  const issued = await new ApiKeyStore(em).create({ workspaceId: workspace.id, name: 'other' });
  return { id: workspace.id, auth: { 'x-api-key': issued.key } };
}

/** A digest of every row of each table: equal digests mean no insert, update or delete happened. */
export async function tableDigests(
  stack: TestStack,
  tables: readonly string[],
): Promise<Record<string, string>> {
  const connection = stack.orm.em.fork().getConnection();
  const digests: Record<string, string> = {};
  for (const table of tables) {
    const [row] = await connection.execute<{ rows: number; digest: string }[]>(
      `SELECT count(*)::int AS rows, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS digest FROM ${table} t`,
    );
    digests[table] = `${row!.rows} rows, ${row!.digest}`;
  }
  return digests;
}

/** Sends a request and checks that it left every given table as it was. */
export async function expectNothingWritten(
  stack: TestStack,
  tables: readonly string[],
  request: () => PromiseLike<Response>,
): Promise<Response> {
  const before = await tableDigests(stack, tables);
  const res = await request();
  expect(await tableDigests(stack, tables)).toEqual(before);
  return res;
}

export function expectProblem(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code, type: `urn:flightdeck:problem:${code}` });
}

/** A 400 whose `errors` name the field, with a message containing (or matching) `message` when given. */
export function expectFieldError(res: Response, path: string, message: string | RegExp = /./): void {
  expectProblem(res, 400, 'validation_failed');
  expect(res.body.errors).toContainEqual({
    path,
    message: typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message),
  });
}

/**
 * A write's answer without its `message` (`System created`, `Deployment updated`): the record as reads show it,
 * since only writes answer a message beside the record.
 */
export function withoutMessage<T extends { message?: unknown }>(body: T): Omit<T, 'message'> {
  const { message: _message, ...record } = body;
  return record;
}
