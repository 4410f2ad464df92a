/**
 * A static bound on what evaluating a CEL expression can cost, computed from its parsed AST before
 * it is ever evaluated. Evaluation is synchronous (in the API and in the worker), so nothing can
 * interrupt it once started: an expression is refused unless the worst case is small.
 *
 * The model, in abstract units (a character, a list element, a node evaluated):
 * - every value has a size bound: a literal its length, a record's field `INPUT_SIZE` (the
 *   request body limit bounds any stored value), `a + b` the sum, a `cel.bind` variable the size
 *   of its value, a comprehension variable the size of what it iterates over;
 * - every node has a cost bound: its operands' cost, plus the size of what it reads or builds;
 * - a comprehension runs its body once per element. The elements' sizes add up to at most the
 *   iterated value's size, so the body's cost is bounded by its cost at an empty element times
 *   the element count plus its growth per unit of element size times the total size; the growth
 *   is the larger of the body's slope at 0 and its mean slope up to the whole size, which bounds
 *   both bodies linear in the element (`t.contains('x')`) and ones that iterate over it again.
 *
 * `cel.bind` values that double at each level, or comprehensions chained to multiply a literal,
 * exceed `MAX_VALUE_SIZE` long before they could be built; nested comprehensions over records
 * exceed `MAX_COST`.
 */

/** The largest value a record can hold: the default request body limit (1 MB). */
export const INPUT_SIZE = 1 << 20;
/** The largest value an expression may build: a few record-sized values side by side. */
export const MAX_VALUE_SIZE = 8 * INPUT_SIZE;
/** The most an evaluation may cost: a hundred passes over a record-sized value. */
export const MAX_COST = 100 * INPUT_SIZE;
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

function estimate(node: Node, variables: Variables): Estimate {
  const result = estimateNode(node, variables);
  if (result.size > MAX_VALUE_SIZE) {
    throw new CostError({
      message: `the expression can build a value of ${Math.round(result.size).toExponential(1)} units, more than the limit of ${MAX_VALUE_SIZE}`,
      position: node.pos,
    });
  }
  return result;
}

function estimateNode(node: Node, variables: Variables): Estimate {
  const all = (nodes: Node[]) => nodes.map((n) => estimate(n, variables));
  switch (node.op) {
    case 'value':
      return { size: literalSize(node.args), cost: 1 };
    case 'id':
      return { size: variables.get(node.args as string) ?? INPUT_SIZE, cost: 1 };
    case '.':
    case '.?': {
      const operand = estimate((node.args as [Node])[0], variables);
      return { size: operand.size, cost: operand.cost + 1 };
    }
    case '[]':
    case '[?]': {
      const [operand, key] = all(node.args as Node[]) as [Estimate, Estimate];
      return { size: operand.size, cost: operand.cost + key.cost + key.size };
    }
    case 'list': {
      const elements = sum(all(node.args as Node[]));
      const count = (node.args as Node[]).length;
      return { size: elements.size + count, cost: elements.cost + count };
    }
    case 'map': {
      const entries = sum(all((node.args as [Node, Node][]).flat()));
      const count = (node.args as unknown[]).length;
      return { size: entries.size + count, cost: entries.cost + entries.size + count };
    }
    case '?:': {
      const [condition, left, right] = all(node.args as Node[]) as [Estimate, Estimate, Estimate];
      return {
        size: Math.max(left.size, right.size),
        cost: condition.cost + Math.max(left.cost, right.cost) + 1,
      };
    }
    case '!_':
    case '-_': {
      const operand = estimate(node.args as Node, variables);
      return { size: 1, cost: operand.cost + 1 };
    }
    case '+': {
      const [left, right] = all(node.args as Node[]) as [Estimate, Estimate];
      const size = left.size + right.size;
      return { size, cost: left.cost + right.cost + size };
    }
    case '==':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const [left, right] = all(node.args as Node[]) as [Estimate, Estimate];
      return { size: 1, cost: left.cost + right.cost + Math.min(left.size, right.size) + 1 };
    }
    case 'in': {
      const [element, container] = all(node.args as Node[]) as [Estimate, Estimate];
      return { size: 1, cost: element.cost + container.cost + element.size + 2 * container.size };
    }
    case 'call':
      return estimateCall(node, variables);
    case 'rcall':
      return estimateMethod(node, variables);
    default: {
      // && || - * / %: a bool or a number from its operands.
      const operands = sum(all(node.args as Node[]));
      return { size: 1, cost: operands.cost + 1 };
    }
  }
}

function estimateCall(node: Node, variables: Variables): Estimate {
  const [name, args] = node.args as [string, Node[]];
  const operands = sum(args.map((n) => estimate(n, variables)));
  if (name === 'has' || name === 'size') return { size: 1, cost: operands.cost + 1 };
  // Conversions (string(), bytes(), int(), …) and any other function: at most twice their input.
  const size = 2 * operands.size + 32;
  return { size, cost: operands.cost + size };
}

function estimateMethod(node: Node, variables: Variables): Estimate {
  const [name, receiverNode, argNodes] = node.args as [string, Node, Node[]];
  if (isBind(node)) {
    const [variable, valueNode, body] = argNodes as [Node, Node, Node];
    const value = estimate(valueNode, variables);
    const result = estimate(body, new Map(variables).set(variable.args as string, value.size));
    return { size: result.size, cost: value.cost + result.cost + 1 };
  }
  const receiver = estimate(receiverNode, variables);
  if (COMPREHENSIONS.has(name)) return estimateComprehension(name, receiver, argNodes, variables);
  const args = sum(argNodes.map((n) => estimate(n, variables)));
  const operands = receiver.cost + args.cost;
  switch (name) {
    case 'size':
      return { size: 1, cost: operands + 1 };
    case 'startsWith':
    case 'endsWith':
      return { size: 1, cost: operands + args.size + 1 };
    case 'contains':
    case 'indexOf':
    case 'lastIndexOf':
      return { size: 1, cost: operands + receiver.size + args.size + 1 };
    case 'lowerAscii':
    case 'upperAscii':
    case 'trim':
    case 'substring':
      return { size: receiver.size, cost: operands + receiver.size };
    case 'join': {
      const size = receiver.size * (1 + args.size);
      return { size, cost: operands + size };
    }
    default: {
      // split() and the rest: at most twice their input (a list of parts and their characters).
      const size = 2 * (receiver.size + args.size) + 32;
      return { size, cost: operands + size };
    }
  }
}

function estimateComprehension(
  name: string,
  receiver: Estimate,
  args: Node[],
  variables: Variables,
): Estimate {
  const variable = args[0]!.args as string;
  const bodies = args.slice(1);
  // A list or map of size S has at most S elements (keys, for a map) of total size at most S.
  const count = receiver.size;
  const perElement = overElements(
    (elementSize) => sum(bodies.map((n) => estimate(n, new Map(variables).set(variable, elementSize)))),
    count,
    receiver.size,
  );
  const cost = receiver.cost + perElement.cost + count;
  if (name === 'map') return { size: perElement.size + count, cost: cost + perElement.size };
  if (name === 'filter') return { size: receiver.size, cost };
  return { size: 1, cost };
}

/**
 * Refuses, with a CostError, an expression whose evaluation could cost more than `MAX_COST` or
 * build a value larger than `MAX_VALUE_SIZE`, or that holds too many or too deeply nested
 * comprehensions. `ast` is the parser's tree (before macros are expanded).
 */
export function checkCost(ast: unknown): void {
  if (!isNode(ast)) return;
  checkStructure(ast);
  const { cost } = estimate(ast, new Map());
  if (cost > MAX_COST) {
    throw new CostError({
      message: `evaluating the expression can cost ${Math.round(cost).toExponential(1)} units, more than the limit of ${MAX_COST}`,
    });
  }
}
