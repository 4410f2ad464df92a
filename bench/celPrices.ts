import { Environment } from '@marcbachmann/cel-js';
import { evaluatorOf, nodeKey, sizeOf } from '../domain/celMeter';
import { CEL_PRICES, type Price } from '../domain/celPrices';
import { round } from './environment';

/**
 * Calibrates domain/celPrices.ts: evaluates a corpus that uses every operator, function and macro
 * the selectors' CEL offers, at input sizes from 1 to 10,000, with a profiling evaluator that
 * times each node apart from its children. Per node kind it fits `base + perUnit × units` (units:
 * the sizes of the values the node's children returned plus the size of its own value) to the
 * median self time at each size, and prints the table to paste into domain/celPrices.ts, next to
 * the table in the code. Then it checks the table: composite expressions, each timed as a whole,
 * against what the meter charges them.
 */

const SIZES = [1, 10, 100, 1000, 10_000];
const SAMPLES = Number(process.env.BENCH_CEL_SAMPLES ?? 200);

/** Every operator, function and macro, each expression over inputs of size `s` (x, l, m). */
const CORPUS = [
  // Strings.
  'x.contains(y)',
  'x.startsWith(y)',
  'x.endsWith(y)',
  'x.indexOf(y)',
  'x.indexOf(y, 0)',
  'x.lastIndexOf(y)',
  'x.lastIndexOf(y, 0)',
  'x.lowerAscii()',
  'x.upperAscii()',
  'x.trim()',
  'x.substring(0)',
  'x.substring(0, 1)',
  'x.split(",")',
  'x.split(",", 2)',
  'size(x)',
  'x.size()',
  'x + x',
  'x == x',
  'x != y',
  'x < y',
  'x <= y',
  'x > y',
  'x >= y',
  'bytes(x)',
  'bytes(x).size()',
  'size(bytes(x))',
  'string(bytes(x))',
  'bytes(x) + bytes(x)',
  'bytes(x) == bytes(x)',
  'bytes(j).json()',
  'bytes(x).hex()',
  'bytes(x).base64()',
  'bytes(x).string()',
  'bytes(x).at(0)',
  'string(x)',
  'dyn(x)',
  'type(x) == string',
  // Lists and maps.
  'y in l',
  'y in m',
  'l.join()',
  'l.join(",")',
  'size(l)',
  'l.size()',
  'size(m)',
  'm.size()',
  'l[0]',
  'm["k0"]',
  'm.k0',
  'has(m.k0)',
  'l + l',
  'l == l',
  'm == m',
  '[x, y]',
  '{"a": x, "b": y}',
  // Macros.
  'l.all(e, true)',
  'l.exists(e, false)',
  'l.exists_one(e, false)',
  'l.map(e, e)',
  'l.map(e, true, e)',
  'l.filter(e, true)',
  'm.all(k, true)',
  'm.exists(k, false)',
  'cel.bind(v, x, v)',
  // Numbers and logic.
  'string(n)',
  'string(d)',
  'string(b)',
  'int("123")',
  'int(d)',
  'uint(n)',
  'uint("123")',
  'double(n)',
  'double("1.5")',
  'bool("true")',
  'n + n',
  'n - n',
  'n * n',
  'n / 7',
  'n % 7',
  'd + d',
  'd * d',
  'd / 3.0',
  '-n',
  '!b',
  'b && b',
  'b || b',
  'b ? x : y',
  'n < 3',
  'n == 3',
  // Time.
  'timestamp(t)',
  'timestamp(n)',
  'timestamp(t).getDate()',
  'timestamp(t).getDate("Europe/Paris")',
  'timestamp(t).getDayOfMonth()',
  'timestamp(t).getDayOfMonth("Europe/Paris")',
  'timestamp(t).getDayOfWeek()',
  'timestamp(t).getDayOfWeek("Europe/Paris")',
  'timestamp(t).getDayOfYear()',
  'timestamp(t).getDayOfYear("Europe/Paris")',
  'timestamp(t).getFullYear()',
  'timestamp(t).getFullYear("Europe/Paris")',
  'timestamp(t).getHours()',
  'timestamp(t).getHours("Europe/Paris")',
  'timestamp(t).getMilliseconds()',
  'timestamp(t).getMilliseconds("Europe/Paris")',
  'timestamp(t).getMinutes()',
  'timestamp(t).getMinutes("Europe/Paris")',
  'timestamp(t).getMonth()',
  'timestamp(t).getMonth("Europe/Paris")',
  'timestamp(t).getSeconds()',
  'timestamp(t).getSeconds("Europe/Paris")',
  'duration(p)',
  'duration(p).getHours()',
  'duration(p).getMinutes()',
  'duration(p).getSeconds()',
  'duration(p).getMilliseconds()',
  'timestamp(t) + duration(p)',
  'timestamp(t) - duration(p)',
  'timestamp(t) - timestamp(t)',
  'timestamp(t) < timestamp(t)',
  'duration(p) + duration(p)',
  'duration(p) < duration(p)',
];

/** Composite expressions for the check: each as a whole against the meter's charge. */
const CHECKS = [
  'x.contains("needle") && m.exists(k, k.startsWith("k1"))',
  'l.all(e, e.size() < 20) || y in l',
  'cel.bind(parts, x.split(","), parts.exists(p, p.endsWith("9")))',
  'l.map(e, e + y).filter(e, e.contains("9")).size() > 0',
  'l.exists(e, timestamp(t).getHours("Europe/Paris") > 24)',
  'x.lowerAscii().upperAscii().split(",").join("-").size() > 0',
];

const VARIABLES = {
  x: 'string',
  y: 'string',
  j: 'string',
  t: 'string',
  p: 'string',
  l: 'list<string>',
  m: 'map<string, string>',
  n: 'int',
  d: 'double',
  b: 'bool',
} as const;

function inputs(size: number): Record<string, unknown> {
  const elements = Array.from({ length: size }, (_, i) => `e${i}`.padEnd(8, 'x'));
  return {
    x: Array.from({ length: Math.ceil(size / 8) }, (_, i) => `${i},abcdef`.slice(0, 8))
      .join('')
      .slice(0, size)
      .padEnd(size, 'q'),
    y: 'zz',
    j: JSON.stringify(Object.fromEntries(elements.map((e, i) => [e, i]))),
    t: '2026-11-25T10:00:00Z',
    p: '90m',
    l: elements,
    m: Object.fromEntries(elements.map((e, i) => [`k${i}`, e])),
    n: 12345n,
    d: 1.5,
    b: true,
  };
}

interface Sample {
  /** The corpus expression and input size the sample comes from. */
  source: string;
  units: number;
  selfNs: number;
}

function environment(): Environment {
  const env = new Environment({
    limits: { maxAstNodes: 1000, maxDepth: 64, maxListElements: 1000, maxMapEntries: 1000 },
  });
  for (const [name, type] of Object.entries(VARIABLES)) env.registerVariable(name, type);
  return env;
}

interface ProfiledNode {
  op: string;
  args: unknown;
  evaluate(evaluator: unknown, node: ProfiledNode, context: unknown): unknown;
}

/** Self time and units of every node evaluated, by node kind. */
class Profiler {
  readonly samples = new Map<string, Sample[]>();
  /** The corpus expression and size being evaluated. */
  source = '';
  /** Sizes and time of the current node's children (see installProfiler). */
  childSizes = 0;
  childNs = 0;

  install(env: Environment): void {
    installProfiler(env, this);
  }

  record(key: string, units: number, selfNs: number): void {
    let list = this.samples.get(key);
    if (!list) this.samples.set(key, (list = []));
    list.push({ source: this.source, units, selfNs: Math.max(0, selfNs) });
  }
}

/** Times each node the evaluator runs apart from its children, into `profiler`. */
function installProfiler(env: Environment, profiler: Profiler): void {
  evaluatorOf(env).run = function run(this: unknown, node: ProfiledNode, context: unknown) {
    const outerSizes = profiler.childSizes;
    const outerNs = profiler.childNs;
    profiler.childSizes = 0;
    profiler.childNs = 0;
    const entered = performance.now();
    const value = node.evaluate(this, node, context);
    const evaluatedNs = (performance.now() - entered) * 1e6;
    const size = sizeOf(value);
    profiler.record(nodeKey(node), profiler.childSizes + size, evaluatedNs - profiler.childNs);
    profiler.childSizes = outerSizes + size;
    // The parent's time includes all of this wrapper's, sizing and recording included.
    profiler.childNs = outerNs + (performance.now() - entered) * 1e6;
    return value;
  } as never;
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
};
const median = (values: number[]): number => quantile(values, 0.5);
const upperQuartile = (values: number[]): number => quantile(values, 0.75);

/** Every node costs at least this, before scaling: the evaluator's own work per node. */
const FLOOR_NS = 20;

/**
 * Nodes whose value is a comprehension's accumulator (or that run one): their work per element is
 * charged to the nodes they run per element, so the sizes they pass along, which grow with every
 * element, are not priced (that would charge a map over n elements n² times).
 */
const ACCUMULATING = new Set([
  'accuPush',
  'accuValue',
  '?:',
  '.all/2',
  '.exists/2',
  '.exists_one/2',
  '.map/2',
  '.map/3',
  '.filter/2',
  '.bind/3',
]);

/** Inputs up to this size count as small: they set the base price; larger ones the per-unit price. */
const SMALL_UNITS = 16;

/**
 * A fit near the top of what was measured, so the price covers nearly every case (one node kind
 * serves strings, lists and maps alike, at different speeds) without following one noisy sample:
 * the base is the upper quartile of the median self times at small inputs, the per-unit price the
 * upper quartile of the slopes above that base at large ones.
 */
function fit(samples: Sample[]): Price {
  const groups = new Map<string, { units: number[]; ns: number[] }>();
  for (const sample of samples) {
    const group = groups.get(sample.source) ?? { units: [], ns: [] };
    group.units.push(sample.units);
    group.ns.push(sample.selfNs);
    groups.set(sample.source, group);
  }
  const points = [...groups.values()].map((group) => ({ units: median(group.units), ns: median(group.ns) }));
  const small = points.filter((p) => p.units <= SMALL_UNITS);
  const base = Math.max(FLOOR_NS, upperQuartile((small.length > 0 ? small : points).map((p) => p.ns)));
  const slopes = points.filter((p) => p.units > SMALL_UNITS).map((p) => (p.ns - base) / p.units);
  const perUnit = Math.max(0, upperQuartile(slopes));
  return { base: round(base, 0), perUnit: round(perUnit, 3) };
}

function timeWhole(run: () => unknown, samples: number): number {
  for (let i = 0; i < 5; i++) run();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    run();
    times.push((performance.now() - started) * 1e6);
  }
  return median(times);
}

/** Each node an evaluation visits, as the meter sees it: its price key and its units. */
type Visit = [key: string, units: number];

/** The visits of one evaluation of `text`, the root's included (the meter charges it last). */
function visitsOf(text: string, context: Record<string, unknown>): Visit[] {
  const env = environment();
  const visits: Visit[] = [];
  let childSizes = 0;
  evaluatorOf(env).run = function run(this: unknown, node: ProfiledNode, ctx: unknown) {
    const outer = childSizes;
    childSizes = 0;
    const value = node.evaluate(this, node, ctx);
    const size = sizeOf(value);
    visits.push([nodeKey(node), childSizes + size]);
    childSizes = outer + size;
    return value;
  } as never;
  const parsed = env.parse(text);
  parsed.check();
  const result = parsed(context);
  visits.push([nodeKey(parsed.ast as unknown as ProfiledNode), childSizes + sizeOf(result)]);
  return visits;
}

const chargeOf = (visits: Visit[], table: Readonly<Record<string, Price>>): number =>
  visits.reduce((sum, [key, units]) => {
    const price = table[key] ?? { base: 0, perUnit: 0 };
    return sum + price.base + price.perUnit * units;
  }, 0);

/** An evaluation timed as a whole, without any instrumentation. */
function timePlain(text: string, context: Record<string, unknown>): number {
  const parsed = environment().parse(text);
  parsed.check();
  return timeWhole(() => parsed(context), 100);
}

const scaled = (table: Record<string, Price>, factor: number): Record<string, Price> =>
  Object.fromEntries(
    Object.entries(table).map(([key, price]) => [
      key,
      { base: Math.max(1, round(price.base * factor, 0)), perUnit: round(price.perUnit * factor, 3) },
    ]),
  );

export async function run(): Promise<Record<string, unknown>> {
  const profiled = environment();
  const profiler = new Profiler();
  profiler.install(profiled);

  for (const size of SIZES) {
    const context = inputs(size);
    for (const text of CORPUS) {
      // The library evaluates the root itself, so the node measured must not be the root.
      const parsed = profiled.parse(`[${text}][0]`);
      const checked = parsed.check();
      if (!checked.valid) throw new Error(`${text}: ${String(checked.error)}`);
      const samples = size >= 1000 ? Math.max(20, SAMPLES / 10) : SAMPLES;
      profiler.source = `warm-up`;
      for (let i = 0; i < 5; i++) parsed(context);
      profiler.source = `${text} @${size}`;
      for (let i = 0; i < samples; i++) parsed(context);
    }
  }

  // Relative prices from the profile (each node's self time includes its share of the timer's).
  const relative = Object.fromEntries(
    [...profiler.samples]
      .map(([key, samples]) => [key, samples.filter((sample) => sample.source !== 'warm-up')] as const)
      .filter(([, samples]) => samples.length > 0)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, samples]) => {
        const price = fit(samples);
        return [key, ACCUMULATING.has(key) ? { ...price, perUnit: 0 } : price];
      }),
  );

  // Their scale from whole evaluations timed without instrumentation: chosen so that three
  // evaluations in four are charged at least what they took.
  const wholes = [...CORPUS, ...CHECKS].flatMap((text) =>
    [10, 1000].map((size) => {
      const context = inputs(size);
      return { text, size, visits: visitsOf(text, context), measuredNs: timePlain(text, context) };
    }),
  );
  const factor = upperQuartile(wholes.map((w) => w.measuredNs / Math.max(1, chargeOf(w.visits, relative))));
  const table = scaled(relative, factor);

  const ratios = wholes.map((w) => chargeOf(w.visits, table) / w.measuredNs);
  const checks = wholes
    .filter((w) => CHECKS.includes(w.text))
    .map((w) => ({
      expression: w.text,
      size: w.size,
      chargedUnits: round(chargeOf(w.visits, table), 0),
      measuredNs: round(w.measuredNs, 0),
      chargedOverMeasured: round(chargeOf(w.visits, table) / w.measuredNs, 2),
      chargedOverMeasuredWithCodeTable: round(chargeOf(w.visits, CEL_PRICES) / w.measuredNs, 2),
    }));

  const missing = Object.keys(table).filter((key) => !(key in CEL_PRICES));
  const drift = Object.entries(table)
    .filter(([key]) => key in CEL_PRICES)
    .map(([key, price]) => ({ key, baseRatio: round(price.base / CEL_PRICES[key]!.base, 2) }))
    .filter((entry) => entry.baseRatio > 2 || entry.baseRatio < 0.5);

  return {
    scale: round(factor, 3),
    chargedOverMeasured: {
      p10: round(quantile(ratios, 0.1), 2),
      p50: round(median(ratios), 2),
      p90: round(quantile(ratios, 0.9), 2),
    },
    table,
    missingFromCode: missing,
    driftAgainstCode: drift,
    checks,
  };
}
