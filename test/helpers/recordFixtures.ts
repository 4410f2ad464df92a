import type { Response } from 'supertest';
import { expectNothingWritten, withoutMessage, type WorkspaceAccess } from './records';
import type { TestStack } from './stack';

/**
 * What the per-resource HTTP tests of workspace records (test/integration/records/systems.test.ts,
 * environments, deployments, versions, resources, jobAgents, deploymentVariables, policies) share:
 * matchers for the fields every record has, and records created over HTTP with names unique in the file.
 */

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = expect.stringMatching(UUID_PATTERN);
export const TIMESTAMP = expect.stringMatching(TIMESTAMP_PATTERN);
/** How a sensitive value is shown, and how a client sends it back to keep the stored one. */
export const REDACTED = { sensitive: true };

/** Every table a request to the systems, environments, deployments and versions endpoints may write. */
export const CATALOG_TABLES = [
  'system',
  'system_deployment',
  'system_environment',
  'environment',
  'deployment',
  'deployment_version',
  'release_target',
  'outbox',
] as const;

/** Every table the resources, job agents, deployment variables and policies endpoints write to. */
export const ASSIGNMENT_TABLES = [
  'resource',
  'resource_variable',
  'release_target',
  'job_agent',
  'deployment',
  'deployment_variable',
  'deployment_variable_value',
  'policy',
  'outbox',
] as const;

/** A described request, for tables of requests that must all answer the same. */
export type Attempt = [what: string, request: () => PromiseLike<Response>];

export function sqlOf(stack: () => TestStack) {
  return <T extends object[]>(query: string, params: unknown[] = []): Promise<T> =>
    stack().orm.em.fork().getConnection().execute<T>(query, params);
}

/** Sends a request that must be refused (4xx, problem+json), and checks that none of `tables` changed. */
export async function refusedWithoutWrites(
  stack: TestStack,
  tables: readonly string[],
  send: () => PromiseLike<Response>,
): Promise<Response> {
  const res = await expectNothingWritten(stack, tables, send);
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  return res;
}

/** A deployment read by id without Ctrlplane's `deployment`, `systems` and `variables` beside its fields. */
export function deploymentFieldsOf(body: Record<string, unknown>) {
  const { deployment: _deployment, systems: _systems, variables: _variables, ...fields } = body;
  return fields;
}

/**
 * Creates systems, environments, deployments and versions over HTTP, checking each answer (202 with its
 * `message`; 200 for a version). `stack` is read when called, so this can be made before `beforeAll` runs;
 * `workspace` defaults to the stack's own.
 */
export function recordMaker(stack: () => TestStack) {
  let sequence = 0;
  const mine = (): WorkspaceAccess => ({ id: stack().workspaceId, auth: stack().auth });
  const unique = (prefix: string) => `${prefix}-${++sequence}`;
  const base = (workspace: WorkspaceAccess = mine()) => `/v1/workspaces/${workspace.id}`;

  async function createSystem(body: Record<string, unknown> = {}, workspace: WorkspaceAccess = mine()) {
    const res = await stack()
      .http.post(`${base(workspace)}/systems`)
      .set(workspace.auth)
      .send({ name: unique('System'), ...body })
      .expect(202);
    expect(res.body.message).toBe('System created');
    return withoutMessage(res.body) as { id: string; slug: string; name: string };
  }

  async function createEnvironment(body: Record<string, unknown> = {}, workspace: WorkspaceAccess = mine()) {
    const res = await stack()
      .http.post(`${base(workspace)}/environments`)
      .set(workspace.auth)
      .send({ name: unique('env'), ...body })
      .expect(202);
    expect(res.body.message).toBe('Environment created');
    return withoutMessage(res.body) as { id: string; name: string };
  }

  async function createDeployment(body: Record<string, unknown> = {}, workspace: WorkspaceAccess = mine()) {
    const name = unique('deployment');
    const res = await stack()
      .http.post(`${base(workspace)}/deployments`)
      .set(workspace.auth)
      .send({ name, slug: name, ...body })
      .expect(202);
    expect(res.body.message).toBe('Deployment created');
    return withoutMessage(res.body) as { id: string; name: string; slug: string; jobAgents: unknown[] };
  }

  async function createVersion(
    deploymentId: string,
    body: Record<string, unknown>,
    workspace: WorkspaceAccess = mine(),
  ) {
    const res = await stack()
      .http.post(`${base(workspace)}/deployments/${deploymentId}/versions`)
      .set(workspace.auth)
      .send(body)
      .expect(200);
    return res.body as { id: string; tag: string; status: string };
  }

  return { unique, base, createSystem, createEnvironment, createDeployment, createVersion };
}
