import type { Response } from 'supertest';
import { FILTER_BATCH, FILTER_SCAN_LIMIT } from '../../../application/common';
import { expectNothingWritten, expectProblem } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** `cel.bind` thirty levels deep, each doubling a string: 2^31 characters if it were evaluated. */
function bindBomb(): string {
  let expression = 'v30.size() > 0';
  for (let i = 30; i >= 1; i--) expression = `cel.bind(v${i}, v${i - 1} + v${i - 1}, ${expression})`;
  return `cel.bind(v0, 'xx', ${expression})`;
}

/** Seven binds, each repeating the last value ten times: 10^9 characters, under the bind count. */
function fewBindsBomb(): string {
  let expression = 'v7.size() > 0';
  for (let i = 7; i >= 1; i--) {
    expression = `cel.bind(v${i}, ${Array(10)
      .fill(`v${i - 1}`)
      .join(' + ')}, ${expression})`;
  }
  return `cel.bind(v0, '${'x'.repeat(100)}', ${expression})`;
}

const TABLES = ['resource', 'environment', 'policy', 'release_target', 'outbox'] as const;

/**
 * Expressions and durations that would cost the shared process without bound are refused with a
 * 400 problem, saved or given per request; the process keeps answering; a filtered list reads the
 * workspace in bounded batches.
 */
describe('bounded expressions and durations', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const listResources = (cel: string) =>
    stack.http.get(`${ws()}/resources`).query({ cel, limit: 10 }).set(stack.auth);

  function expectRefusedExpression(res: Response, reason: RegExp): void {
    expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(res.body)).toMatch(reason);
  }

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    for (const [identifier, kind] of [
      ['prod/api', 'service'],
      ['prod/db', 'database'],
    ]) {
      const res = await stack.http
        .put(`${ws()}/resources/identifier/${encodeURIComponent(identifier!)}`)
        .set(stack.auth)
        .send({ name: identifier, version: 'v1', kind });
      expect(res.status).toBe(202);
    }
  });
  afterAll(() => stack.close());

  it('answers 400 with the reason to expression bombs in ?cel=, and keeps answering', async () => {
    expect(bindBomb().length).toBeLessThan(1000);
    expectRefusedExpression(
      await listResources(bindBomb()),
      /more than 8 comprehensions and cel\.bind calls/,
    );
    expectRefusedExpression(
      await listResources(fewBindsBomb()),
      /can build a value of .* more than the limit/,
    );
    const nested = 'resource.config.a.all(x, resource.config.b.all(y, x == y))';
    expectRefusedExpression(await listResources(nested), /evaluating the expression can cost/);

    const res = await listResources('resource.kind == "service"');
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: { identifier: string }) => r.identifier)).toEqual(['prod/api']);
  });

  it('refuses the same bombs in saved selectors and conditions, and stores nothing', async () => {
    const environment = await expectNothingWritten(stack, TABLES, () =>
      stack.http
        .post(`${ws()}/environments`)
        .set(stack.auth)
        .send({ name: 'bomb', resourceSelector: bindBomb() }),
    );
    expectRefusedExpression(environment, /more than 8 comprehensions/);
    const metric = {
      name: 'health',
      intervalSeconds: 60,
      count: 1,
      provider: { type: 'sleep', durationSeconds: 1 },
      successCondition: fewBindsBomb(),
    };
    const policy = await expectNothingWritten(stack, TABLES, () =>
      stack.http
        .post(`${ws()}/policies`)
        .set(stack.auth)
        .send({ name: 'bomb', rules: [{ verification: { metrics: [metric] } }] }),
    );
    expectRefusedExpression(policy, /can build a value/);
    expect((await stack.http.get(`${ws()}/environments`).set(stack.auth)).status).toBe(200);
  });

  it('refuses a policy with a 1e13-second cooldown, and stores nothing', async () => {
    const res = await expectNothingWritten(stack, TABLES, () =>
      stack.http
        .post(`${ws()}/policies`)
        .set(stack.auth)
        .send({ name: 'forever', rules: [{ versionCooldown: { intervalSeconds: 1e13 } }] }),
    );
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toContainEqual({
      path: 'body.rules[0].versionCooldown.intervalSeconds',
      message: expect.stringMatching(/<=\s*31622400/),
    });
  });

  it('judges a filter left to CEL in batches and stops reading after FILTER_SCAN_LIMIT records, saying so', async () => {
    // Records written straight to the table: thousands of PUTs would only slow the test.
    await stack.orm.em
      .fork()
      .getConnection()
      .execute(
        `INSERT INTO resource (id, workspace_id, identifier, name, version, kind, created_at)
         SELECT gen_random_uuid(), ?, 'bulk/' || n, 'bulk ' || n, 'v1', CASE WHEN n % 1000 = 0 THEN 'rare' ELSE 'bulk' END,
                now() + n * interval '1 microsecond'
         FROM generate_series(1, ?) AS n`,
        [stack.workspaceId, FILTER_SCAN_LIMIT + FILTER_BATCH],
      );

    // Past the first batch, matches page in order: `bulk/1000` … `bulk/9000` lie within the limit.
    // `size()` is judged by CEL, record by record (engine/selectors/celSql.ts leaves it).
    const rare = await stack.http
      .get(`${ws()}/resources`)
      .query({ cel: 'size(resource.kind) == 4 && resource.kind.endsWith("rare")', limit: 3, offset: 2 })
      .set(stack.auth);
    expect(rare.status).toBe(200);
    expect(rare.body.items.map((r: { identifier: string }) => r.identifier)).toEqual([
      'bulk/3000',
      'bulk/4000',
      'bulk/5000',
    ]);
    expect(rare.body).toMatchObject({
      limit: 3,
      offset: 2,
      scanLimit: FILTER_SCAN_LIMIT,
      totalIsExact: false,
      nextCursor: expect.any(String),
    });
    // Two seeded resources and 9,998 bulk ones were read: bulk/1000 … bulk/9000 matched.
    expect(rare.body.totalAtLeast).toBe(9);
    expect(rare.body).not.toHaveProperty('total');

    // The same filter as SQL counts every match, bulk/10000 among them.
    const counted = await stack.http
      .get(`${ws()}/resources`)
      .query({ cel: 'resource.kind == "rare"', limit: 1 })
      .set(stack.auth);
    expect(counted.body).toMatchObject({ total: 10, totalIsExact: true });
    expect(counted.body.scanLimit).toBeUndefined();

    const unfiltered = await stack.http.get(`${ws()}/resources`).query({ limit: 1 }).set(stack.auth);
    expect(unfiltered.body.total).toBe(FILTER_SCAN_LIMIT + FILTER_BATCH + 2);
    expect(unfiltered.body.scanLimit).toBeUndefined();
  });
});
