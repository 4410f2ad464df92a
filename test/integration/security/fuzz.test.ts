import type { Response } from 'supertest';
import { OpenApiFuzzer, recurrenceRuleCases, type FuzzCase, type KnownIds } from '../../helpers/fuzz';
import { createOtherWorkspace } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

const ADMIN_TOKEN = 'operator-token-for-fuzzing-0123456789';

/**
 * Every malformed request the OpenAPI document implies, sent to a workspace that holds one record
 * of each kind: no answer is a 5xx, every answer is a 4xx problem, and no table changed. A key no
 * schema declares, at any depth of any body, is a 400 naming its path (docs/api.md "Conventions"); a control
 * character in text people read is a 400 naming the field and the character (docs/security.md "Shared
 * processes").
 */
describe('malformed requests derived from the OpenAPI document', () => {
  let stack: TestStack;
  let known: KnownIds;

  async function create(path: string, body: object, method: 'post' | 'put' = 'post'): Promise<string> {
    const res = await stack.http[method](`/v1/workspaces/${stack.workspaceId}${path}`)
      .set(stack.auth)
      .send(body);
    if (res.status >= 300) throw new Error(`seeding ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  }

  /** Rows of every table, and a digest of each one but the API keys' (their use is recorded). */
  async function snapshot(): Promise<Record<string, string>> {
    const connection = stack.orm.em.fork().getConnection();
    const tables = await connection.execute<{ table_name: string }[]>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`,
    );
    const state: Record<string, string> = {};
    for (const { table_name: table } of tables) {
      const digest =
        table === 'api_key'
          ? `count(*)::text`
          : `count(*) || ' ' || md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))`;
      const [row] = await connection.execute<{ state: string }[]>(
        `SELECT ${digest} AS state FROM "${table}" t`,
      );
      state[table] = row!.state;
    }
    return state;
  }

  function send(fuzz: FuzzCase): Promise<Response> {
    const isAdmin = fuzz.admin === true || fuzz.path.startsWith('/v1/admin/');
    let request = stack.http[fuzz.method](fuzz.path).set(
      isAdmin ? { Authorization: `Bearer ${ADMIN_TOKEN}` } : stack.auth,
    );
    if (fuzz.raw !== undefined) return request.set('Content-Type', 'application/json').send(fuzz.raw);
    if (fuzz.body !== undefined)
      request = request.set('Content-Type', 'application/json').send(JSON.stringify(fuzz.body));
    return request;
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN });
    await createOtherWorkspace(stack);
    const systemId = await create('/systems', { name: 'Fuzz system' });
    const environmentId = await create('/environments', { name: 'fuzz-env', resourceSelector: 'true' });
    const jobAgentId = '0190aaaa-0000-7000-8000-000000000001';
    await create(`/job-agents/${jobAgentId}`, { name: 'fuzz-agent', type: 'http-pull' }, 'put');
    const deploymentId = await create('/deployments', {
      name: 'Fuzz deployment',
      slug: 'fuzz-deployment',
      jobAgents: [{ ref: jobAgentId }],
    });
    const resourceId = await create(
      '/resources/identifier/fuzz-resource',
      { name: 'fuzz', version: 'v1', kind: 'service' },
      'put',
    );
    const deploymentVersionId = await create(`/deployments/${deploymentId}/versions`, {
      tag: 'v1.0.0',
      status: 'building',
    });
    const policyId = await create('/policies', { name: 'fuzz-policy' });
    const variableId = '0190aaaa-0000-7000-8000-000000000002';
    await create(`/deployments/${deploymentId}/variables/${variableId}`, { key: 'FUZZ' }, 'put');
    const variableSetId = await create('/variable-sets', {
      name: 'fuzz-set',
      selector: 'true',
      variables: [{ key: 'FUZZ', value: 'x', sensitive: true }],
    });
    known = {
      workspaceId: stack.workspaceId,
      systemId,
      environmentId,
      deploymentId,
      deploymentVersionId,
      resourceId,
      jobAgentId,
      policyId,
      variableId,
      variableSetId,
      identifier: 'fuzz-resource',
      name: 'fuzz-env',
    };
  });
  afterAll(() => stack.close());

  it('refuses a misspelled key at every object of every body, naming its path, and changes nothing', async () => {
    const cases = new OpenApiFuzzer(stack.app.openapi as never, known).misspelledKeyCases();
    expect(cases.length).toBeGreaterThanOrEqual(150);
    for (const field of ['body.variables[0].sensitve', 'body.jobAgents[0].selecor']) {
      expect(cases.map((fuzz) => fuzz.field)).toContain(field);
    }
    const before = await snapshot();
    const wrong: string[] = [];
    for (const fuzz of cases) {
      const res = await send(fuzz);
      const named = (res.body?.errors ?? []).some(
        (issue: { path: string; message: string }) =>
          issue.path === fuzz.field && issue.message === 'unknown field',
      );
      if (res.status !== 400 || !named) {
        wrong.push(`${fuzz.label} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  it('refuses control and bidirectional characters in every text field of every body, naming the field and the character, and changes nothing', async () => {
    const fuzzer = new OpenApiFuzzer(stack.app.openapi as never, known);
    // GitHub's payload: its run's name is searched for a job id, never stored or shown.
    expect(fuzzer.unguardedTextFields()).toEqual([
      'POST /v1/workspaces/{workspaceId}/job-agents/{jobAgentId}/github/webhook: body.workflow_run.name',
    ]);
    const cases = fuzzer.controlCharacterCases();
    expect(cases.length).toBeGreaterThanOrEqual(800);
    for (const field of ['body.reason', 'body.description', 'body.rules[0].verification.metrics[0].name']) {
      expect(cases.map((fuzz) => fuzz.field)).toContain(field);
    }
    const before = await snapshot();
    const wrong: string[] = [];
    for (const fuzz of cases) {
      const res = await send(fuzz);
      const named = (res.body?.errors ?? []).some(
        (issue: { path: string; message: string }) =>
          issue.path === fuzz.field && issue.message.includes(fuzz.codePoint),
      );
      if (res.status !== 400 || !named) {
        wrong.push(`${fuzz.label} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  it('answers every recurrence rule of a window or a freeze at once, with a 2xx or a 4xx problem, and a refusal changes nothing', async () => {
    const rules = recurrenceRuleCases(400);
    const before = await snapshot();
    const wrong: string[] = [];
    let slowest = 0;
    for (const rrule of rules) {
      const dryRun = {
        name: 'fuzz window',
        selector: 'true',
        rules: [{ deploymentWindow: { rrule, durationMinutes: 60 } }],
      };
      const hold = {
        selector: 'false',
        effect: 'block',
        reason: 'fuzz',
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
        schedule: { rrule, durationSeconds: 60 },
      };
      for (const [path, body] of [
        ['/policies/dry-run', dryRun],
        ['/holds', hold],
      ] as const) {
        const began = performance.now();
        const res = await stack.http
          .post(`/v1/workspaces/${stack.workspaceId}${path}`)
          .set(stack.auth)
          .send(body);
        slowest = Math.max(slowest, performance.now() - began);
        const problem = /^application\/problem\+json/.test(res.headers['content-type'] ?? '');
        if (res.status >= 500 || (res.status >= 400 && !problem))
          wrong.push(`${path} ${JSON.stringify(rrule)} → ${res.status}`);
        if (path === '/holds' && res.status === 201) {
          await stack.http
            .delete(`/v1/workspaces/${stack.workspaceId}/holds/${res.body.id}`)
            .set(stack.auth)
            .expect(204);
        }
      }
    }
    process.stderr.write(
      `[fuzz] ${rules.length} recurrence rules, the slowest answer ${slowest.toFixed(0)} ms\n`,
    );
    expect(wrong).toEqual([]);
    const after = await snapshot();
    // Holds that were accepted were deleted again; their audit events and webhook rows stay.
    for (const table of ['hold', 'policy', 'job_hold']) expect(after[table]).toBe(before[table]);
  });

  it('answers at least 1,000 of them with 4xx problem+json and changes nothing', async () => {
    const cases = new OpenApiFuzzer(stack.app.openapi as never, known).cases();
    expect(cases.length).toBeGreaterThanOrEqual(1000);
    const before = await snapshot();
    const wrong: string[] = [];
    for (const fuzz of cases) {
      const res = await send(fuzz);
      const problem = /^application\/problem\+json/.test(res.headers['content-type'] ?? '');
      if (res.status < 400 || res.status >= 500 || !problem) {
        wrong.push(`${fuzz.label} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await snapshot()).toEqual(before);
    const health = await stack.http.get('/healthz');
    expect(health.status).toBe(200);
  });
});
