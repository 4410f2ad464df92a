import { Environment } from '@marcbachmann/cel-js';
import { Meter, meterEnvironment, nodeKey, withMeter } from '../../domain/celMeter';
import { CEL_PRICES } from '../../domain/celPrices';
import { OverBudgetError } from '../../domain/errors';
import {
  CelQuery,
  checkSelector,
  EVALUATION_LIMIT,
  reportOverrunsTo,
  RequestBudget,
  selectorMatches,
  type SelectorOverrun,
} from '../../domain/selectors';

const resource = (config: Record<string, unknown> = {}) => ({
  kind: 'service',
  version: 'v1',
  name: 'api',
  identifier: 'prod/api',
  metadata: { env: 'qa' },
  config,
});

/** An expression of a shape f2a736a accepted, at 2.7 s per record there, stalling every other request. */
const ZONED_PAIRS = `cel.bind(parts, "${Array.from({ length: 127 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(',')}".split(","),
  parts.all(a, parts.all(b, timestamp("2026-01-01T00:00:00Z").getHours("Europe/Paris") >= 0)))`;

/** Statically cheap on ordinary records, linear in a list the record holds. */
const PER_ITEM = 'resource.config.items.exists(i, i.contains("zz") && i.endsWith("q"))';

describe('the CEL budget', () => {
  afterEach(() => reportOverrunsTo(undefined));

  it('refuses, before running it, an expression whose literals make it expensive on any record', () => {
    expect(ZONED_PAIRS.length).toBeLessThan(600);
    const problem = checkSelector('resource', ZONED_PAIRS);
    expect(problem?.message).toMatch(/costs about .* on ordinary records, more than the limit of 2\.0 ms/);
    // The same shape without the zoned call and over a short list is fine.
    expect(
      checkSelector('resource', 'cel.bind(p, "a,b,c".split(","), p.all(a, p.all(b, a != "")))'),
    ).toBeUndefined();
  });

  it('stops a saved selector that turns out expensive on a large record, reports it, and does not match', () => {
    expect(checkSelector('resource', PER_ITEM)).toBeUndefined();
    const overruns: SelectorOverrun[] = [];
    reportOverrunsTo((overrun) => overruns.push(overrun));

    const small = resource({ items: ['a', 'bzzq'] });
    expect(selectorMatches('resource', PER_ITEM, { resource: small })).toBe(true);
    expect(overruns).toEqual([]);

    const large = resource({ items: Array.from({ length: 200_000 }, (_, i) => `item-${i}`) });
    expect(selectorMatches('resource', PER_ITEM, { resource: large })).toBe(false);
    expect(overruns).toHaveLength(1);
    expect(overruns[0]).toMatchObject({ scope: 'resource', expression: PER_ITEM });
    // Stopped at the node that passed the limit, far before the 200,000 items were all read.
    expect(overruns[0]!.spent).toBeGreaterThan(EVALUATION_LIMIT);
    expect(overruns[0]!.spent).toBeLessThan(EVALUATION_LIMIT * 1.5);
  });

  it('charges the same for the same expression and input, so workflows replay to the same verdict', () => {
    const env = new Environment();
    env.registerVariable('l', 'list<string>');
    meterEnvironment(env);
    const parsed = env.parse('l.map(e, e + "x").filter(e, e.startsWith("a")).size() > 1');
    parsed.check();
    const spend = () => {
      const meter = new Meter(Number.MAX_SAFE_INTEGER);
      withMeter(meter, parsed.ast, () => parsed({ l: ['a', 'b', 'ab', 'ba'] }));
      return meter.spent;
    };
    const first = spend();
    expect(first).toBeGreaterThan(0);
    expect(spend()).toBe(first);
  });

  it('answers a query over its budget with 422 and what was measured, per record or for the request', () => {
    const perRecord = new CelQuery('resource', PER_ITEM);
    const large = resource({ items: Array.from({ length: 200_000 }, (_, i) => `item-${i}`) });
    expect(() => perRecord.matches({ resource: large })).toThrow(OverBudgetError);
    expect(() => perRecord.matches({ resource: large })).toThrow(/stopped after costing .* on one record/);

    const budget = new RequestBudget(200_000);
    const query = new CelQuery('resource', PER_ITEM, budget);
    const medium = { resource: resource({ items: Array.from({ length: 50 }, (_, i) => `item-${i}`) }) };
    let answered = 0;
    expect(() => {
      for (;;) {
        query.matches(medium);
        answered++;
      }
    }).toThrow(/more than this request may spend: .* over \d+ records/);
    expect(answered).toBeGreaterThan(0);
    expect(budget.spent).toBeGreaterThan(200_000);
  });

  it('has a measured price for every function and operator the selectors offer', () => {
    const env = new Environment();
    const definitions = env.getDefinitions() as {
      functions: { name: string; receiverType: string | null; params: unknown[] }[];
    };
    // Optional types are off and matches() is refused (domain/selectors.ts), so they never run.
    const offered = definitions.functions
      .filter((f) => f.receiverType !== 'optional' && f.receiverType !== 'OptionalNamespace')
      .filter((f) => !['matches', 'hasValue', 'none', 'of', 'or', 'orValue', 'value'].includes(f.name))
      .map((f) =>
        nodeKey({
          op: f.receiverType ? 'rcall' : 'call',
          args: f.receiverType ? [f.name, null, f.params] : [f.name, f.params],
        }),
      );
    const operators = ['value', 'id', '.', '[]', 'list', 'map', '?:', '!_', '-_', '+', '-', '*', '/', '%'];
    operators.push('==', '!=', '<', '<=', '>', '>=', 'in', '&&', '||', 'accuPush', 'accuValue');
    const missing = [...new Set([...offered, ...operators])].filter((key) => !(key in CEL_PRICES));
    expect(missing).toEqual([]);
  });

  it('prices a zoned time function far above its UTC form, as measured', () => {
    expect(CEL_PRICES['.getHours/1']!.base).toBeGreaterThan(100 * CEL_PRICES['.getHours/0']!.base);
  });
});
