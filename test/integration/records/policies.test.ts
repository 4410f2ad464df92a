import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  ASSIGNMENT_TABLES,
  refusedWithoutWrites as refusedIn,
  sqlOf,
  TIMESTAMP_PATTERN as ISO_TIMESTAMP,
  UUID_PATTERN as UUID,
} from '../../helpers/recordFixtures';
import { expectFieldError } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Policies over HTTP: created by POST and upserted by PUT with an id for every rule, listed, validated
 * (bad CEL named by position), deleted. 401, another workspace's policy (404) and duplicate names (409):
 * contract.test.ts.
 */
describe('policies over HTTP', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const sql = sqlOf(() => stack);
  const query = <T extends object>(text: string, params: unknown[] = []) => sql<T[]>(text, params);
  const refusedWithoutWrites = (send: () => PromiseLike<Response>) =>
    refusedIn(stack, ASSIGNMENT_TABLES, send);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  const policiesPath = () => `${ws()}/policies`;
  const policyPath = (id: string, base = ws()) => `${base}/policies/${id}`;
  let gate: Record<string, unknown> & { id: string };
  let window: Record<string, unknown> & { id: string };
  const windowId = randomUUID();
  /** The fields every rule read back has beside its kind. */
  const ruleOf = (policyId?: string) => ({
    id: expect.stringMatching(UUID),
    policyId: policyId ?? expect.stringMatching(UUID),
    createdAt: expect.stringMatching(ISO_TIMESTAMP),
  });

  it('creates a policy with POST (202), its rules as written with an id for each', async () => {
    const res = await stack.http
      .post(policiesPath())
      .set(stack.auth)
      .send({
        name: 'Production gate',
        rules: [
          { anyApproval: { minApprovals: 2 } },
          { versionSelector: { selector: 'version.tag.startsWith("v1.")' } },
          { environmentProgression: { dependsOnEnvironmentSelector: 'environment.name == "staging"' } },
        ],
      })
      .expect(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      workspaceId: stack.workspaceId,
      name: 'Production gate',
      selector: 'true',
      priority: 0,
      enabled: true,
      metadata: {},
      rules: [
        { ...ruleOf(), anyApproval: { minApprovals: 2 } },
        { ...ruleOf(), versionSelector: { selector: 'version.tag.startsWith("v1.")' } },
        {
          ...ruleOf(),
          environmentProgression: {
            dependsOnEnvironmentSelector: 'environment.name == "staging"',
          },
        },
      ],
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const ruleIds = (res.body.rules as { id: string }[]).map((rule) => rule.id);
    expect(new Set(ruleIds).size).toBe(3);
    expect((res.body.rules as { policyId: string }[]).map((rule) => rule.policyId)).toEqual(
      ruleIds.map(() => res.body.id),
    );
    gate = res.body;

    const read = await stack.http.get(policyPath(gate.id)).set(stack.auth).expect(200);
    expect(read.body).toEqual(gate);
    const [stored] = await query<{ rules: { id: string }[] }>('SELECT rules FROM policy WHERE id = ?', [
      gate.id,
    ]);
    expect(stored!.rules.map((rule) => rule.id)).toEqual(ruleIds);
  });

  it('upserts with PUT (202, created or replaced), keeping rule ids sent back', async () => {
    const weekdays = { rrule: 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR', durationMinutes: 480 };
    const created = await stack.http
      .put(policyPath(windowId))
      .set(stack.auth)
      .send({
        name: 'Weekday window',
        description: 'Deploy to production on weekdays',
        selector: 'environment.name == "production"',
        priority: 10,
        enabled: false,
        metadata: { team: 'sre' },
        rules: [{ deploymentWindow: weekdays }],
      })
      .expect(202);
    expect(created.body).toEqual({
      id: windowId,
      workspaceId: stack.workspaceId,
      name: 'Weekday window',
      description: 'Deploy to production on weekdays',
      selector: 'environment.name == "production"',
      priority: 10,
      enabled: false,
      metadata: { team: 'sre' },
      rules: [
        {
          ...ruleOf(windowId),
          deploymentWindow: weekdays,
        },
      ],
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const windowRuleId = created.body.rules[0].id as string;

    const replaced = await stack.http
      .put(policyPath(windowId))
      .set(stack.auth)
      .send({
        name: 'Weekday window',
        rules: [
          { id: windowRuleId, deploymentWindow: { ...weekdays, timezone: 'Europe/Berlin' } },
          { retry: { maxRetries: 3 } },
        ],
      })
      .expect(202);
    // The replacement names no description, so the policy no longer has one.
    const { description: _description, ...createdWithoutDescription } = created.body;
    expect(replaced.body).toEqual({
      ...createdWithoutDescription,
      selector: 'true',
      priority: 0,
      enabled: true,
      metadata: {},
      rules: [
        {
          // The rule sent back by id keeps the time it was first written.
          id: windowRuleId,
          policyId: windowId,
          createdAt: created.body.rules[0].createdAt,
          deploymentWindow: { ...weekdays, timezone: 'Europe/Berlin' },
        },
        { ...ruleOf(windowId), retry: { maxRetries: 3 } },
      ],
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    expect(replaced.body).not.toHaveProperty('description');
    window = replaced.body;
    expect((await stack.http.get(policyPath(windowId)).set(stack.auth).expect(200)).body).toEqual(window);
  });

  it('lists policies oldest first', async () => {
    const res = await stack.http.get(policiesPath()).set(stack.auth).expect(200);
    expect(res.body).toEqual({ items: [gate, window], total: 2, limit: 50, offset: 0 });
  });

  it.each([
    [
      'an approval rule needing no approvals',
      { rules: [{ anyApproval: { minApprovals: 0 } }] },
      'body.rules[0].anyApproval.minApprovals',
    ],
    [
      'a rule holding two kinds',
      {
        rules: [
          { anyApproval: { minApprovals: 1 } },
          { anyApproval: { minApprovals: 1 }, retry: { maxRetries: 1 } },
        ],
      },
      'body.rules[1]',
    ],
    ['a rule holding no kind', { rules: [{}] }, 'body.rules[0]'],
    ['an unknown rule kind', { rules: [{ manualGate: {} }] }, 'body.rules[0]'],
    [
      'a deployment window that is not an RFC 5545 rule',
      { rules: [{ deploymentWindow: { rrule: 'EVERY MONDAY', durationMinutes: 60 } }] },
      'body.rules[0].deploymentWindow.rrule',
    ],
    [
      'an unknown time zone',
      {
        rules: [{ deploymentWindow: { rrule: 'FREQ=DAILY', durationMinutes: 60, timezone: 'Mars/Olympus' } }],
      },
      'body.rules[0].deploymentWindow.timezone',
    ],
    [
      'a deployment window that never starts (February 31st)',
      { rules: [{ deploymentWindow: { rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31', durationMinutes: 60 } }] },
      'body.rules[0].deploymentWindow.rrule',
    ],
    [
      'a deployment window that starts before 1970',
      {
        rules: [
          { deploymentWindow: { rrule: 'DTSTART:19650101T000000Z\nRRULE:FREQ=HOURLY', durationMinutes: 60 } },
        ],
      },
      'body.rules[0].deploymentWindow.rrule',
    ],
    ['a priority out of range', { priority: 5000 }, 'body.priority'],
    ['an empty name', { name: '' }, 'body.name'],
  ])('answers 400 for %s, with its field path, and writes nothing', async (_, body, path) => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .post(policiesPath())
        .set(stack.auth)
        .send({ name: 'Invalid', ...body }),
    );
    expectFieldError(res, path);
  });

  it('says which kinds a rule with two kinds holds', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(policyPath(randomUUID()))
        .set(stack.auth)
        .send({
          name: 'Two kinds',
          rules: [{ anyApproval: { minApprovals: 1 }, retry: { maxRetries: 1 } }],
        }),
    );
    expectFieldError(
      res,
      'body.rules[0]',
      'a rule holds exactly one kind, this one has anyApproval and retry',
    );
  });

  it.each([
    [
      'versionSelector.selector',
      { rules: [{ versionSelector: { selector: 'version.tg == "x"' } }] },
      'body.rules[0].versionSelector.selector',
      'invalid CEL: line 1, column 9: No such key: tg',
    ],
    [
      'the policy selector',
      { selector: 'environment.nme == "production"' },
      'body.selector',
      'invalid CEL: line 1, column 13: No such key: nme',
    ],
    [
      'environmentProgression.dependsOnEnvironmentSelector',
      { rules: [{ environmentProgression: { dependsOnEnvironmentSelector: 'environment.name ==' } }] },
      'body.rules[0].environmentProgression.dependsOnEnvironmentSelector',
      /^invalid CEL: line 1, column \d+: /,
    ],
  ])(
    'answers 400 for bad CEL in %s, naming the position, and writes nothing',
    async (_, body, path, message) => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .post(policiesPath())
          .set(stack.auth)
          .send({ name: 'Bad CEL', ...body }),
      );
      expectFieldError(res, path, message);
      expect(res.body.errors.find((e: { path: string }) => e.path === path).message).toContain(
        'line 1, column',
      );
    },
  );

  it('answers every rule kind as written: no optional field it was not given comes back (a second plan is clean)', async () => {
    const rules = [
      { gradualRollout: { rolloutType: 'linear-normalized', timeScaleInterval: 600 } },
      {
        verification: {
          metrics: [
            {
              name: 'sleep-check',
              intervalSeconds: 10,
              count: 1,
              successCondition: 'true',
              successThreshold: 1,
              provider: { type: 'sleep', durationSeconds: 30 },
            },
            {
              name: 'health',
              intervalSeconds: 30,
              count: 3,
              successCondition: 'result.statusCode == 200',
              provider: { type: 'http', url: 'https://status.example.com/health' },
            },
          ],
        },
      },
      { retry: { maxRetries: 1 } },
      { deploymentWindow: { rrule: 'FREQ=DAILY;BYHOUR=9', durationMinutes: 60 } },
      { environmentProgression: { dependsOnEnvironmentSelector: 'environment.name == "qa"' } },
    ];
    const body = { name: 'As written', selector: "environment.name == 'gradual-rollout'", rules };
    const created = await stack.http.post(policiesPath()).set(stack.auth).send(body).expect(202);
    const read = await stack.http.get(policyPath(created.body.id)).set(stack.auth).expect(200);
    for (const answer of [created.body, read.body])
      expect(answer.rules).toEqual(rules.map((rule) => ({ ...ruleOf(created.body.id), ...rule })));
    await stack.http.delete(policyPath(created.body.id)).set(stack.auth).expect(202);
  });

  it('deletes a policy with 202, answering the policy as it was', async () => {
    const res = await stack.http.delete(policyPath(gate.id)).set(stack.auth).expect(202);
    expect(res.body).toEqual(gate);
    await stack.http.get(policyPath(gate.id)).set(stack.auth).expect(404);
    const list = await stack.http.get(policiesPath()).set(stack.auth).expect(200);
    expect(list.body).toEqual({ items: [window], total: 1, limit: 50, offset: 0 });
    expect(
      (await refusedWithoutWrites(() => stack.http.delete(policyPath(gate.id)).set(stack.auth))).status,
    ).toBe(404);
  });
});
