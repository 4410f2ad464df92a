import { recordSelectorOverruns } from '../../../engine/selectors';
import { recordsApi } from '../../helpers/orchestration';
import { expectNothingWritten, expectProblem } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** An expression of a shape f2a736a accepted, at 2.7 s per record there, every other request waiting. */
const ZONED_PAIRS = `cel.bind(parts, "${Array.from({ length: 127 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(',')}".split(","), parts.all(a, parts.all(b, timestamp("2026-01-01T00:00:00Z").getHours("Europe/Paris") >= 0)))`;

/** Cheap on ordinary records; linear in a list the resource holds, so dear on a large one. */
const PER_ITEM = 'resource.config.items.exists(i, i.contains("zz") && i.endsWith("q"))';
const LARGE_ITEMS = Array.from({ length: 60_000 }, (_, i) => `item-${i}`);

/**
 * docs/security.md "CEL budget": an expression is priced before it runs and metered while it
 * runs; one given with a request answers 422 past its budget, a saved one that turns out slow does
 * not match there and says so on its record and in explain.
 */
describe('the CEL budget over HTTP', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  const flushOverruns = () => recordSelectorOverruns(stack.orm)();

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.resource('small', 'service', { tier: 'web' }, { config: { items: ['a', 'bzzq'] } });
    await api.resource('large', 'service', { tier: 'web' }, { config: { items: LARGE_ITEMS } });
  });
  afterAll(() => stack.close());

  it('refuses, with the estimate, an expression expensive on any record, given or saved', async () => {
    const listed = await stack.http.get(`${api.ws}/resources`).query({ cel: ZONED_PAIRS }).set(stack.auth);
    expectProblem(listed, 400, 'validation_failed');
    expect(JSON.stringify(listed.body)).toMatch(/costs about .* on ordinary records, more than the limit/);
    const saved = await expectNothingWritten(stack, ['environment'], () =>
      stack.http
        .post(`${api.ws}/environments`)
        .set(stack.auth)
        .send({ name: 'zoned', resourceSelector: ZONED_PAIRS }),
    );
    expectProblem(saved, 400, 'validation_failed');
  });

  it('answers 422 with what it measured when a filter turns out too dear on a record', async () => {
    const dear = await stack.http.get(`${api.ws}/resources`).query({ cel: PER_ITEM }).set(stack.auth);
    expectProblem(dear, 422, 'over_budget');
    expect(dear.body.detail).toMatch(
      /stopped after costing \d+(\.\d)? ms on one record \(at most 10\.0 ms per record\)/,
    );
    // Kept off the large resource, the same filter answers.
    const narrowed = await stack.http
      .get(`${api.ws}/resources`)
      .query({ cel: `resource.name == "small" && ${PER_ITEM}` })
      .set(stack.auth);
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.items.map((r: { name: string }) => r.name)).toEqual(['small']);
  });

  it('reports a saved selector that turned out slow on its record and in explain; it did not match there', async () => {
    const system = await api.system('Budget');
    const environmentId = await api.environment('slow', PER_ITEM, system);
    const deploymentId = await api.deployment('budget-svc', system);
    await flushOverruns();

    const small = await api.get<{ id: string }>(`/resources/identifier/small`);
    const targets = await api.get<{ items: { resourceId: string }[] }>(
      `/release-targets?environmentId=${environmentId}`,
    );
    expect(targets.items.map((t) => t.resourceId)).toEqual([small.id]);

    const environment = await api.get<{ selectorWarnings?: { path: string; message: string }[] }>(
      `/environments/${environmentId}`,
    );
    expect(environment.selectorWarnings).toEqual([
      {
        path: 'resourceSelector',
        message: expect.stringMatching(/stopped by its budget \d+ time\(s\), after up to .* on one record/),
        lastSeenAt: expect.any(String),
      },
    ]);
    const listed = await api.get<{ items: { id: string; selectorWarnings?: unknown[] }[] }>('/environments');
    expect(listed.items.find((e) => e.id === environmentId)?.selectorWarnings).toHaveLength(1);

    await api.version(deploymentId, '1.0.0');
    const explained = await api.get<{ selectorWarnings?: { record: { type: string; id: string } }[] }>(
      `/release-targets/${small.id}-${environmentId}-${deploymentId}/explain`,
    );
    expect(explained.selectorWarnings).toContainEqual(
      expect.objectContaining({ record: { type: 'environment', id: environmentId, name: 'slow' } }),
    );
  });
});
