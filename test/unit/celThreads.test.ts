import { OverBudgetError } from '../../domain/errors';
import { CelQuery, RequestBudget } from '../../domain/selectors';
import { judgeRows, type RowShape, type StoredRow, CelThreads } from '../../engine/selectors';

/** Rows as a filter reads them: JSON as text, timestamps as epoch milliseconds. */
const SHAPE: RowShape = { json: ['metadata', 'config'], dates: ['createdAt'] };
const row = (name: string, items: string[]): StoredRow => ({
  id: `id-${name}`,
  kind: 'service',
  version: 'v1',
  name,
  identifier: `prod/${name}`,
  metadata: JSON.stringify({ env: name.startsWith('prod') ? 'prod' : 'qa' }),
  config: JSON.stringify({ items }),
  createdAt: Date.UTC(2026, 0, 1),
});

const PER_ITEM = 'resource.config.items.exists(i, i.contains("zz") && i.endsWith("q"))';

describe('request CEL on threads', () => {
  const threads = new CelThreads(2);

  it('judges rows sent as text the way the expression judges the parsed records', async () => {
    const rows = [row('prod-a', ['x']), row('qa-b', ['y']), row('prod-c', ['zzq'])];
    const query = new CelQuery(
      'resource',
      'resource.metadata["env"] == "prod" && resource.config.items.size() > 0',
    );
    await expect(threads.matchRows('ws-1', query, rows, SHAPE)).resolves.toEqual([true, false, true]);
    expect(query.budget.evaluations).toBe(3);
    expect(query.budget.spent).toBeGreaterThan(0);

    const byItems = new CelQuery('resource', PER_ITEM);
    await expect(threads.matchRows('ws-1', byItems, rows, SHAPE)).resolves.toEqual([false, false, true]);
  });

  it("charges the request's budget across batches and answers 422 once it is spent", async () => {
    const medium = Array.from({ length: 50 }, (_, i) => `item-${i}`);
    const query = new CelQuery('resource', PER_ITEM, new RequestBudget(200_000));
    const rows = [row('prod-m', medium)];
    let batches = 0;
    const scan = async () => {
      for (;;) {
        await threads.matchRows('ws-2', query, rows, SHAPE);
        batches++;
      }
    };
    const stopped = await scan().catch((error: unknown) => error);
    expect(stopped).toBeInstanceOf(OverBudgetError);
    expect((stopped as Error).message).toMatch(/more than this request may spend: .* over \d+ records/);
    expect(batches).toBeGreaterThan(0);
    expect(query.budget.spent).toBeGreaterThan(0);
  });

  it('answers 422 for one record past the per-record limit, as on the event loop', () => {
    const large = Array.from({ length: 200_000 }, (_, i) => `item-${i}`);
    const verdicts = judgeRows({
      scope: 'resource',
      expression: PER_ITEM,
      budget: { limit: new RequestBudget().limit, spent: 0, evaluations: 0 },
      rows: [row('prod-large', large)],
      shape: SHAPE,
    });
    expect(verdicts).toEqual({ overBudget: expect.stringMatching(/stopped after costing .* on one record/) });
  });

  it('serves other workspaces while one keeps every thread it may hold busy', async () => {
    const heavy = Array.from({ length: 8_000 }, (_, i) => `item-${i}`);
    const busy = Array.from({ length: 6 }, () =>
      threads.matchRows('ws-busy', new CelQuery('resource', PER_ITEM), [row('prod-h', heavy)], SHAPE),
    );
    const started = performance.now();
    const other = await threads.matchRows(
      'ws-other',
      new CelQuery('resource', 'true'),
      [row('qa', [])],
      SHAPE,
    );
    const otherMs = performance.now() - started;
    const busyMs = await Promise.all(busy).then(() => performance.now() - started);
    expect(other).toEqual([true]);
    expect(otherMs).toBeLessThan(busyMs);
  });
});
