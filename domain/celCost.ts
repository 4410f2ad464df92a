import { formatUnits, nodeKey } from './celMeter';
import { priceOf } from './celPrices';

/**
 * The static half of the CEL budget (docs/security.md "CEL budget"): bounds on what
 * evaluating an expression can cost and build, computed from its parsed AST with the calibrated
 * prices of domain/celPrices.ts before it is ever evaluated. The runtime half, domain/celMeter.ts,
 * stops an evaluation that costs more than its limit on the records it meets; these bounds refuse,
 * when an expression is saved or queried, what no record could make cheap:
 *
 * - on ordinary records (every field `TYPICAL_SIZE` units), an evaluation must cost at most
 *   `MAX_TYPICAL_COST`: a cost that comes from the expression's own literals (a `cel.bind` of a long
 *   split iterated twice around a zoned `getHours`) is refused outright instead of being stopped on
 *   every record it meets;
 * - on the largest records (every field `INPUT_SIZE`, the body limit), it must cost at most
 *   `MAX_WORST_COST` (one pass over a record is fine, pairs of a record's elements are not) and
 *   build no value larger than `MAX_VALUE_SIZE`: the meter charges a value once it is built, so
 *   memory is bounded here.
 *
 * The model: every value has a size bound (a literal its length, a record's field the assumed
 * field size, `a + b` the sum, a `cel.bind` variable the size of its value, a comprehension variable
 * the size of what it iterates over); every node costs its price — `base + perUnit × (sizes read
 * + size built)`, as the meter charges it — plus its operands; a comprehension runs its body once
 * per element, the elements' sizes adding up to at most the iterated value's size, so its body costs
 * at most the body's cost at an empty element times the count plus its growth per unit of element
 * size times the total (the growth being the larger of its slope at 0 and its mean slope up to the
 * whole size, which bounds both bodies linear in the element and ones that iterate over it again).
 */

/** The largest value a record can hold: the default request body limit (1 MB). */
export const INPUT_SIZE = 1 << 20;
/** A record field's size on ordinary records. */
export const TYPICAL_SIZE = 64;
/** The largest value an expression may build: a few record-sized values side by side. */
export const MAX_VALUE_SIZE = 8 * INPUT_SIZE;
/** The most an evaluation may cost on ordinary records: 2 ms. */
export const MAX_TYPICAL_COST = 2e6;
/** The most an evaluation may cost on the largest records: 10 s (the meter stops it long before). */
export const MAX_WORST_COST = 1e10;
/** Comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`) and `cel.bind` in one expression. */
export const MAX_COMPREHENSIONS = 8;
/** Comprehensions inside the body of another. */
export const MAX_COMPREHENSION_NESTING = 2;

export interface CostProblem {
  message: string;
  /** 0-based offset of the node at fault, when one is. */
  position?: number;
}

export class CostError extends Error {
  constructor(readonly problem: CostProblem) {
    super(problem.message);
  }
}

interface Node {
  op: string;
  args: unknown;
  pos?: number;
}

interface Estimate {
  size: number;
  cost: number;
}

const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/** Sizes of the variables in scope: `cel.bind` and comprehension variables. */
type Variables = ReadonlyMap<string, number>;

/** What the estimate assumes of the records the expression reads. */
interface Assumption {
  /** The size of any field of a record. */
  fieldSize: number;
}

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && typeof (value as Node).op === 'string';

function isBind(node: Node): boolean {
  if (node.op !== 'rcall') return false;
  const [name, receiver] = node.args as [string, Node];
  return name === 'bind' && receiver.op === 'id' && receiver.args === 'cel';
}

function isComprehension(node: Node): boolean {
  return node.op === 'rcall' && COMPREHENSIONS.has((node.args as [string])[0]);
}

/** Counts comprehensions and `cel.bind`, and how deep comprehensions nest in one another's bodies. */
function checkStructure(root: Node): void {
  let count = 0;
  const visit = (node: unknown, nesting: number): void => {
    if (Array.isArray(node)) {
      for (const child of node) visit(child, nesting);
      return;
    }
    if (!isNode(node)) return;
    if (isBind(node) || isComprehension(node)) {
      if (++count > MAX_COMPREHENSIONS) {
        throw new CostError({
          message: `the expression has more than ${MAX_COMPREHENSIONS} comprehensions and cel.bind calls`,
          position: node.pos,
        });
      }
    }
    if (isComprehension(node)) {
      const [, receiver, args] = node.args as [string, Node, Node[]];
      if (nesting >= MAX_COMPREHENSION_NESTING) {
        throw new CostError({
          message: `comprehensions nest more than ${MAX_COMPREHENSION_NESTING} deep`,
          position: node.pos,
        });
      }
      visit(receiver, nesting);
      visit(args, nesting + 1);
      return;
    }
    visit(node.args, nesting);
  };
  visit(root, 0);
}

function literalSize(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value instanceof Uint8Array) return value.length;
  return 1;
}

function sum(estimates: Estimate[]): Estimate {
  return estimates.reduce((a, b) => ({ size: a.size + b.size, cost: a.cost + b.cost }), { size: 0, cost: 0 });
}

/**
 * What running `body` once per element costs in all, for `count` elements whose sizes add up to
 * at most `total`; `at(e)` estimates one run with an element of size `e`.
 */
function overElements(at: (elementSize: number) => Estimate, count: number, total: number): Estimate {
  const empty = at(0);
  const unit = at(1);
  const whole = total > 1 ? at(total) : unit;
  const growth = (pick: (e: Estimate) => number) =>
    Math.max(pick(unit) - pick(empty), total > 1 ? (pick(whole) - pick(empty)) / total : 0);
  return {
    size: count * empty.size + total * growth((e) => e.size),
    cost: count * empty.cost + total * growth((e) => e.cost),
  };
}

class Estimator {
  constructor(private readonly assumption: Assumption) {}

  estimate(node: Node, variables: Variables): Estimate {
    const result = this.estimateNode(node, variables);
    if (result.size > MAX_VALUE_SIZE) {
      throw new CostError({
        message: `the expression can build a value of ${Math.round(result.size).toExponential(1)} units, more than the limit of ${MAX_VALUE_SIZE}`,
        position: node.pos,
      });
    }
    return result;
  }

  /** A node's own price on top of its operands', for operands of total size `read` and a result of `size`. */
  private priced(node: Node, operands: Estimate, size: number): Estimate {
    const price = priceOf(nodeKey(node));
    return { size, cost: operands.cost + price.base + price.perUnit * (operands.size + size) };
  }

  private estimateNode(node: Node, variables: Variables): Estimate {
    const all = (nodes: Node[]) => nodes.map((n) => this.estimate(n, variables));
    switch (node.op) {
      case 'value':
        return this.priced(node, { size: 0, cost: 0 }, literalSize(node.args));
      case 'id':
        return this.priced(
          node,
          { size: 0, cost: 0 },
          variables.get(node.args as string) ?? this.assumption.fieldSize,
        );
      case '.':
      case '.?': {
        const operand = this.estimate((node.args as [Node])[0], variables);
        return this.priced(node, operand, operand.size);
      }
      case '[]':
      case '[?]': {
        const operands = all(node.args as Node[]);
        return this.priced(node, sum(operands), operands[0]!.size);
      }
      case 'list': {
        const elements = sum(all(node.args as Node[]));
        return this.priced(node, elements, elements.size + (node.args as Node[]).length);
      }
      case 'map': {
        const entries = sum(all((node.args as [Node, Node][]).flat()));
        return this.priced(node, entries, entries.size + (node.args as unknown[]).length);
      }
      case '?:': {
        const [condition, left, right] = all(node.args as Node[]) as [Estimate, Estimate, Estimate];
        const branch = { size: Math.max(left.size, right.size), cost: Math.max(left.cost, right.cost) };
        return this.priced(node, sum([condition, branch]), branch.size);
      }
      case '+': {
        const operands = sum(all(node.args as Node[]));
        return this.priced(node, operands, operands.size);
      }
      case 'call':
        return this.estimateCall(node, variables);
      case 'rcall':
        return this.estimateMethod(node, variables);
      default: {
        // Unary and binary operators: a bool or a number from their operands.
        const operands = Array.isArray(node.args)
          ? all(node.args as Node[])
          : [this.estimate(node.args as Node, variables)];
        return this.priced(node, sum(operands), 1);
      }
    }
  }

  private estimateCall(node: Node, variables: Variables): Estimate {
    const [name, args] = node.args as [string, Node[]];
    const operands = sum(args.map((n) => this.estimate(n, variables)));
    if (name === 'has' || name === 'size') return this.priced(node, operands, 1);
    // Conversions (string(), bytes(), int(), …): at most twice their input.
    return this.priced(node, operands, 2 * operands.size + 32);
  }

  private estimateMethod(node: Node, variables: Variables): Estimate {
    const [name, receiverNode, argNodes] = node.args as [string, Node, Node[]];
    if (isBind(node)) {
      const [variable, valueNode, body] = argNodes as [Node, Node, Node];
      const value = this.estimate(valueNode, variables);
      const result = this.estimate(body, new Map(variables).set(variable.args as string, value.size));
      return this.priced(node, { size: 0, cost: value.cost + result.cost }, result.size);
    }
    const receiver = this.estimate(receiverNode, variables);
    if (COMPREHENSIONS.has(name)) return this.estimateComprehension(node, receiver, argNodes, variables);
    const args = sum(argNodes.map((n) => this.estimate(n, variables)));
    const operands = sum([receiver, args]);
    switch (name) {
      case 'size':
      case 'startsWith':
      case 'endsWith':
      case 'contains':
      case 'indexOf':
      case 'lastIndexOf':
        return this.priced(node, operands, 1);
      case 'lowerAscii':
      case 'upperAscii':
      case 'trim':
      case 'substring':
        return this.priced(node, operands, receiver.size);
      case 'join':
        return this.priced(node, operands, receiver.size * (1 + args.size));
      default:
        // split() and the rest: at most twice their input (a list of parts and their characters).
        return this.priced(node, operands, 2 * operands.size + 32);
    }
  }

  private estimateComprehension(
    node: Node,
    receiver: Estimate,
    args: Node[],
    variables: Variables,
  ): Estimate {
    const name = (node.args as [string])[0];
    const variable = args[0]!.args as string;
    const bodies = args.slice(1);
    // A list or map of size S has at most S elements (keys, for a map) of total size at most S.
    const count = receiver.size;
    const perElement = overElements(
      (elementSize) =>
        sum(bodies.map((n) => this.estimate(n, new Map(variables).set(variable, elementSize)))),
      count,
      receiver.size,
    );
    const size = name === 'map' ? perElement.size + count : name === 'filter' ? receiver.size : 1;
    // The comprehension's own price per unit is its cost of iterating: the iterated value is what it reads.
    const looped = this.priced(node, { size: receiver.size, cost: receiver.cost + perElement.cost }, 0);
    return { size, cost: looped.cost };
  }
}

const ORDINARY: Assumption = { fieldSize: TYPICAL_SIZE };
const LARGEST: Assumption = { fieldSize: INPUT_SIZE };

/**
 * Refuses, with a CostError, an expression that holds too many or too deeply nested
 * comprehensions, that can build a value larger than `MAX_VALUE_SIZE`, or whose evaluation can
 * cost more than `MAX_TYPICAL_COST` on ordinary records or `MAX_WORST_COST` on the largest.
 * `ast` is the parser's tree (before macros are expanded).
 */
export function checkCost(ast: unknown): void {
  if (!isNode(ast)) return;
  checkStructure(ast);
  const ordinary = new Estimator(ORDINARY).estimate(ast, new Map()).cost;
  if (ordinary > MAX_TYPICAL_COST) {
    throw new CostError({
      message: `evaluating the expression costs about ${formatUnits(ordinary)} on ordinary records, more than the limit of ${formatUnits(MAX_TYPICAL_COST)}`,
    });
  }
  const worst = new Estimator(LARGEST).estimate(ast, new Map()).cost;
  if (worst > MAX_WORST_COST) {
    throw new CostError({
      message: `evaluating the expression can cost ${formatUnits(worst)} on the largest records, more than the limit of ${formatUnits(MAX_WORST_COST)}`,
    });
  }
}
