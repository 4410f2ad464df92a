import type { Environment } from '@marcbachmann/cel-js';
import { priceOf, type Price } from './celPrices';

/**
 * The runtime half of the CEL budget (docs/security.md "CEL budget"): every node an
 * evaluation visits is charged its calibrated price (domain/celPrices.ts) while the evaluation
 * runs, and the evaluation stops as soon as its meter is past its limit. The static bound
 * (domain/celCost.ts) refuses expressions that are expensive whatever they read; the meter stops
 * those that turn out expensive on the records they meet.
 *
 * Charges are a pure function of the expression and its input, never of the clock, so a workflow
 * that evaluates a selector replays to the same verdict.
 *
 * The library evaluates every node through its evaluator's `run(node, context)`; each environment's
 * evaluator gets a metered `run` (and a `tryEval` that lets a stop through) once, when the
 * environment is made (`meterEnvironment`). The
 * library's version is pinned (package.json) and test/unit/celBudget.test.ts fails if the hook
 * stops seeing nodes.
 */

/** A node of the library's AST, as the metered `run` reads it. */
interface Node {
  op: string;
  args: unknown;
  evaluate(evaluator: unknown, node: Node, context: unknown): unknown;
}

interface Evaluator {
  run(node: Node, context: unknown): unknown;
  tryEval(node: Node, context: unknown): unknown;
}

/** The state of one evaluation: what it has spent, and where it must stop. */
export class Meter {
  spent = 0;
  constructor(readonly limit: number) {}

  get exceeded(): boolean {
    return this.spent > this.limit;
  }
}

/** An evaluation stopped by its meter. */
export class EvaluationOverBudget extends Error {
  constructor(readonly spent: number) {
    super(`the evaluation was stopped after ${formatUnits(spent)}`);
  }
}

/** Cost units are nanoseconds on the machine that calibrated the prices; shown as time. */
export function formatUnits(units: number): string {
  if (units >= 1e9) return `${(units / 1e9).toFixed(1)} s`;
  if (units >= 1e6) return `${(units / 1e6).toFixed(1)} ms`;
  return `${(units / 1e3).toFixed(1)} µs`;
}

/** Evaluation is synchronous: one meter is active at a time. */
let active: Meter | undefined;
/** Sizes of the values the current node's children returned, for the node's per-unit charge. */
let childSizes = 0;

/**
 * Entry counts of plain objects (maps of the records being evaluated, mostly), counted once: a
 * record's map is read again and again, and counting its keys is as dear as reading them.
 */
const objectSizes = new WeakMap<object, number>();

/** The size a value counts for: its length or entry count; scalars count 1. */
export function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 1;
  if (Array.isArray(value) || value instanceof Uint8Array) return value.length;
  if (value instanceof Map || value instanceof Set) return value.size;
  let size = objectSizes.get(value);
  if (size === undefined) {
    size = Object.keys(value).length;
    objectSizes.set(value, size);
  }
  return size;
}

/** The price key of a node: the operator, or `name/arity` (`.name/arity` for a method). */
export function nodeKey(node: { op: string; args: unknown }): string {
  if (node.op === 'call') {
    const [name, args] = node.args as [string, unknown[]];
    return `${name}/${args.length}`;
  }
  if (node.op === 'rcall') {
    const [name, , args] = node.args as [string, unknown, unknown[]];
    return `.${name}/${args.length}`;
  }
  return node.op;
}

const prices = new WeakMap<object, Price>();

function priceOfNode(node: Node): Price {
  let price = prices.get(node);
  if (!price) {
    price = priceOf(nodeKey(node));
    prices.set(node, price);
  }
  return price;
}

function meteredRun(this: Evaluator, node: Node, context: unknown): unknown {
  const meter = active;
  if (!meter) return node.evaluate(this, node, context);
  const price = priceOfNode(node);
  meter.spent += price.base;
  if (meter.spent > meter.limit) throw new EvaluationOverBudget(meter.spent);
  const outer = childSizes;
  childSizes = 0;
  const value = node.evaluate(this, node, context);
  const size = sizeOf(value);
  meter.spent += price.perUnit * (childSizes + size);
  childSizes = outer + size;
  if (meter.spent > meter.limit) throw new EvaluationOverBudget(meter.spent);
  return value;
}

/**
 * The library's `tryEval` turns an error into a value where CEL lets a later operand decide
 * (`||`, `&&`, `exists`, `all`): a stopped evaluation must not be one of those, or a quantifier
 * would go on over every element, failing each at once.
 */
function meteredTryEval(this: Evaluator, node: Node, context: unknown): unknown {
  try {
    const value = this.run(node, context);
    return value instanceof Promise ? value.catch((error: unknown) => error) : value;
  } catch (error) {
    if (error instanceof EvaluationOverBudget) throw error;
    return error;
  }
}

/** The evaluator of an environment, reached by evaluating a probe whose root hands it over. */
export function evaluatorOf(env: Environment): Evaluator {
  const probe = env.parse('true');
  probe.check();
  let evaluator: Evaluator | undefined;
  (probe.ast as unknown as Node).evaluate = (given) => {
    evaluator = given as Evaluator;
    return true;
  };
  probe({});
  if (!evaluator || typeof evaluator.run !== 'function') {
    throw new Error('the CEL library no longer evaluates through run(): the meter cannot be installed');
  }
  return evaluator;
}

/** Installs the meter into an environment's evaluator; nodes are charged only while a meter is active. */
export function meterEnvironment(env: Environment): void {
  const evaluator = evaluatorOf(env);
  evaluator.run = meteredRun;
  evaluator.tryEval = meteredTryEval;
}

/**
 * Runs one evaluation of the expression whose root node is `root` under `meter`. Throws EvaluationOverBudget when the meter passes its limit,
 * even where the library would swallow the error (`false && …`, `||`): a result computed past the
 * limit is not trusted.
 */
export function withMeter<T>(meter: Meter, root: { op: string; args: unknown }, evaluate: () => T): T {
  const outerMeter = active;
  const outerSizes = childSizes;
  active = meter;
  childSizes = 0;
  try {
    const result = evaluate();
    // The library evaluates the root itself, not through run(): its charge comes last.
    const price = priceOfNode(root as Node);
    meter.spent += price.base + price.perUnit * (childSizes + sizeOf(result));
    if (meter.exceeded) throw new EvaluationOverBudget(meter.spent);
    return result;
  } catch (error) {
    if (meter.exceeded) throw new EvaluationOverBudget(meter.spent);
    throw error;
  } finally {
    active = outerMeter;
    childSizes = outerSizes;
  }
}
