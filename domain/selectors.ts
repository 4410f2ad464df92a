import { Environment } from '@marcbachmann/cel-js';
import { checkCost, CostError } from './celCost';
import { EvaluationOverBudget, formatUnits, Meter, meterEnvironment, withMeter } from './celMeter';
import { OverBudgetError } from './errors';

/**
 * CEL selectors: the one place expressions are checked, compiled and evaluated.
 *
 * - Each scope declares the identifiers an expression may use, with their field types, so a typo
 *   (`resource.knd`) or a type mismatch is refused when the expression is saved, with its position.
 * - Compiled expressions are cached by scope and text.
 * - Evaluation never throws: an expression that fails at run time (most often a metadata key the
 *   record does not have) does not match.
 * - `matches()` is refused: its regular expressions run on a backtracking engine, so a hostile
 *   pattern could stall the process; `startsWith`, `endsWith` and `contains` cover selectors.
 * - Every evaluation has a budget (docs/security.md "CEL budget"): the parser limits the
 *   expression's size and depth; domain/celCost.ts refuses, before it runs, one that is expensive
 *   whatever it reads or can build too large a value; and domain/celMeter.ts stops an evaluation
 *   that costs more than `EVALUATION_LIMIT` on the record it meets. A saved selector stopped so
 *   does not match, and the overrun is reported (`reportOverrunsTo`); an expression given with a
 *   request (`CelQuery`) answers 422 instead.
 */

const METADATA = 'map<string, string>';
const CONFIG = 'map<string, dyn>';

const RESOURCE = {
  kind: 'string',
  version: 'string',
  name: 'string',
  identifier: 'string',
  metadata: METADATA,
  config: CONFIG,
} as const;

const SCHEMAS = {
  resource: RESOURCE,
  /** The two resources a relationship rule relates. */
  from: RESOURCE,
  to: RESOURCE,
  deployment: { id: 'string', name: 'string', slug: 'string', metadata: METADATA },
  environment: { id: 'string', name: 'string', metadata: METADATA },
  version: {
    id: 'string',
    tag: 'string',
    name: 'string',
    status: 'string',
    metadata: METADATA,
    config: CONFIG,
  },
  /** Its configuration without secrets (domain/jobAgents.ts `agentSelectorContext`). */
  jobAgent: { id: 'string', name: 'string', type: 'string', metadata: METADATA, config: CONFIG },
  /** A verification measurement's result: whatever the provider returned. */
  result: 'dyn',
  /** A runbook run's input values. */
  inputs: 'map<string, dyn>',
  /** An audit event (domain/audit.ts). */
  event: {
    id: 'string',
    createdAt: 'string',
    action: 'string',
    actor: 'map<string, string>',
    record: 'map<string, string>',
    requestId: 'string',
    changes: 'list<string>',
    deploymentId: 'string',
  },
} as const;

type Identifier = keyof typeof SCHEMAS;

/** Which identifiers each kind of expression may use. */
export const SELECTOR_SCOPES = {
  /** Resource selectors of deployments, environments and variable values; resource list filters. */
  resource: ['resource'],
  deployment: ['deployment'],
  environment: ['environment'],
  version: ['version'],
  /** Policy and variable-set selectors: they match release targets. */
  target: ['resource', 'deployment', 'environment'],
  /** The `versionSelector` policy rule. */
  versionRule: ['version', 'resource', 'deployment', 'environment'],
  /** Success and failure conditions of verification metrics. */
  measurement: ['result'],
  /** A deployment's `jobAgentSelector`: which job agents run its jobs. */
  jobAgent: ['jobAgent'],
  /** The `deploymentDependency` policy rule: another deployment and its current version on the resource. */
  dependency: ['deployment', 'version'],
  /** Relationship rules: whether resource `to` is related to resource `from`. */
  relationship: ['from', 'to'],
  /**
   * A runbook's job agent entries: whether the entry runs a job, for the run's inputs, resource and
   * the entry's agent. The scope keeps the runbook's API name: slow selectors are stored by scope
   * (selector_overrun.scope).
   */
  workflowJob: ['inputs', 'resource', 'jobAgent'],
  /** Audit event list filters. */
  event: ['event'],
} as const satisfies Record<string, readonly Identifier[]>;

export type SelectorScope = keyof typeof SELECTOR_SCOPES;

export type SelectorContext = Partial<Record<Identifier, unknown>>;

export const MAX_SELECTOR_LENGTH = 4096;

export interface SelectorProblem {
  message: string;
  /** 0-based offset in the expression, when known. */
  position?: number;
  line?: number;
  column?: number;
}

export class SelectorError extends Error {
  constructor(readonly problem: SelectorProblem) {
    super(describeProblem(problem));
  }
}

export function describeProblem(problem: SelectorProblem): string {
  return problem.line === undefined
    ? problem.message
    : `line ${problem.line}, column ${problem.column}: ${problem.message}`;
}

/** A compiled expression: its evaluation and the root of its tree, which the meter charges last. */
interface Compiled {
  evaluate(context: SelectorContext): unknown;
  root: { op: string; args: unknown };
}

/** The most one evaluation may cost (10 ms on the machine that calibrated the prices). */
export const EVALUATION_LIMIT = 1e7;

const environments = new Map<SelectorScope, Environment>();

function environmentFor(scope: SelectorScope): Environment {
  let env = environments.get(scope);
  if (!env) {
    env = new Environment({
      limits: { maxAstNodes: 1000, maxDepth: 64, maxListElements: 1000, maxMapEntries: 1000 },
    });
    for (const name of SELECTOR_SCOPES[scope]) {
      const declared = SCHEMAS[name];
      if (typeof declared === 'string') env.registerVariable(name, declared);
      else env.registerVariable({ name, schema: declared });
    }
    meterEnvironment(env);
    environments.set(scope, env);
  }
  return env;
}

const CACHE_LIMIT = 10_000;
const cache = new Map<string, Compiled>();

function locate(expression: string, position: number | undefined): Pick<SelectorProblem, 'line' | 'column'> {
  if (position === undefined) return {};
  const before = expression.slice(0, position).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}

function problemFrom(expression: string, error: unknown): SelectorProblem {
  const cause = error as { message?: string; node?: { pos?: number } };
  const message = (cause.message ?? String(error)).split('\n')[0]!.trim();
  const position = typeof cause.node?.pos === 'number' ? cause.node.pos : undefined;
  return { message, position, ...locate(expression, position) };
}

interface AstNode {
  op: string;
  args: unknown;
  pos?: number;
}

function findCall(node: unknown, name: string): AstNode | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = findCall(child, name);
      if (found) return found;
    }
    return undefined;
  }
  if (!node || typeof node !== 'object') return undefined;
  const ast = node as AstNode;
  if ((ast.op === 'call' || ast.op === 'rcall') && Array.isArray(ast.args) && ast.args[0] === name)
    return ast;
  return findCall(ast.args, name);
}

/** Checks an expression for a scope; returns why it is refused, or nothing when it is fine. */
export function checkSelector(scope: SelectorScope, expression: string): SelectorProblem | undefined {
  try {
    compile(scope, expression);
    return undefined;
  } catch (error) {
    if (error instanceof SelectorError) return error.problem;
    throw error;
  }
}

function compile(scope: SelectorScope, expression: string): Compiled {
  const key = `${scope}\u0000${expression}`;
  const cached = cache.get(key);
  if (cached) return cached;
  if (expression.trim() === '') throw new SelectorError({ message: 'the expression is empty' });
  if (expression.length > MAX_SELECTOR_LENGTH) {
    throw new SelectorError({ message: `the expression is longer than ${MAX_SELECTOR_LENGTH} characters` });
  }
  const env = environmentFor(scope);
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = env.parse(expression);
  } catch (error) {
    throw new SelectorError(problemFrom(expression, error));
  }
  const regex = findCall(parsed.ast, 'matches');
  if (regex) {
    throw new SelectorError({
      message: 'matches() is not allowed in selectors; use startsWith(), endsWith() or contains()',
      position: regex.pos,
      ...locate(expression, regex.pos),
    });
  }
  const checked = parsed.check();
  if (!checked.valid) throw new SelectorError(problemFrom(expression, checked.error));
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    throw new SelectorError({
      message: `the expression must evaluate to a bool, not ${String(checked.type)}`,
    });
  }
  try {
    checkCost(parsed.ast);
  } catch (error) {
    if (!(error instanceof CostError)) throw error;
    const { message, position } = error.problem;
    throw new SelectorError({ message, position, ...locate(expression, position) });
  }
  const compiled: Compiled = { evaluate: (context) => parsed(context), root: parsed.ast };
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  cache.set(key, compiled);
  return compiled;
}

/** A selector a record holds, by the path of its field (`resourceSelector`, `rules[0].versionSelector.selector`). */
export interface HeldSelector {
  path: string;
  scope: SelectorScope;
  expression: string | null | undefined;
}

/** A saved selector whose evaluation was stopped by its budget. */
export interface SelectorOverrun {
  scope: SelectorScope;
  expression: string;
  /** What the evaluation had cost when it was stopped, in cost units. */
  spent: number;
}

let overrunSink: ((overrun: SelectorOverrun) => void) | undefined;

/**
 * Where overruns of saved selectors go: the process that evaluates them records them, so the
 * record whose selector is slow shows it (engine/selectors/selectorOverruns.ts). Without a sink (in workflows)
 * an overrun only makes the selector not match.
 */
export function reportOverrunsTo(sink: ((overrun: SelectorOverrun) => void) | undefined): void {
  overrunSink = sink;
}

/**
 * Whether a record matches. `expression` must have passed `checkSelector` (stored selectors have);
 * one that does not compile, fails at run time, or is stopped by its budget does not match.
 */
export function selectorMatches(scope: SelectorScope, expression: string, context: SelectorContext): boolean {
  let compiled: Compiled;
  try {
    compiled = compile(scope, expression);
  } catch {
    return false;
  }
  const meter = new Meter(EVALUATION_LIMIT);
  try {
    return withMeter(meter, compiled.root, () => compiled.evaluate(context)) === true;
  } catch (error) {
    if (error instanceof EvaluationOverBudget) overrunSink?.({ scope, expression, spent: meter.spent });
    return false;
  }
}

/** What CEL given with one request may cost in all (1 s on the machine that calibrated the prices). */
export const REQUEST_LIMIT = 1e9;

/** What the CEL evaluations of one request have spent. */
export class RequestBudget {
  spent = 0;
  evaluations = 0;
  constructor(readonly limit = REQUEST_LIMIT) {}
}

/**
 * An expression given with a request (a `?cel=` filter, a dry run's policy, a runbook run's
 * selector inputs): compiled when made (SelectorError, 400, when it does not check), and each
 * evaluation charged to the request's budget. An evaluation stopped by its own limit or by the
 * request's answers 422 (OverBudgetError) with what was measured, instead of not matching: the
 * caller learns its query was too expensive rather than getting a wrong answer.
 */
export class CelQuery<S extends SelectorScope = SelectorScope> {
  private readonly compiled: Compiled;

  constructor(
    readonly scope: S,
    readonly expression: string,
    readonly budget = new RequestBudget(),
  ) {
    this.compiled = compile(scope, expression);
  }

  /** The parsed expression (cel-js's tree of `{op, args}` nodes), which a list may run as SQL instead. */
  get ast(): unknown {
    return this.compiled.root;
  }

  matches(context: SelectorContext): boolean {
    const remaining = this.budget.limit - this.budget.spent;
    const meter = new Meter(Math.min(EVALUATION_LIMIT, remaining));
    try {
      return withMeter(meter, this.compiled.root, () => this.compiled.evaluate(context)) === true;
    } catch (error) {
      if (error instanceof EvaluationOverBudget) throw this.overBudget(meter);
      return false;
    } finally {
      this.budget.spent += meter.spent;
      this.budget.evaluations++;
    }
  }

  private overBudget(meter: Meter): OverBudgetError {
    const { spent, evaluations, limit } = this.budget;
    return meter.limit < EVALUATION_LIMIT
      ? new OverBudgetError(
          `the expression cost more than this request may spend: ${formatUnits(spent + meter.spent)} over ${evaluations + 1} records (at most ${formatUnits(limit)})`,
        )
      : new OverBudgetError(
          `the expression was stopped after costing ${formatUnits(meter.spent)} on one record (at most ${formatUnits(EVALUATION_LIMIT)} per record)`,
        );
  }
}

/** The fields of each record that selectors see. */
export interface ResourceFields {
  kind: string;
  version: string;
  name: string;
  identifier: string;
  metadata: Record<string, string>;
  config: Record<string, unknown>;
}

export interface DeploymentFields {
  id: string;
  name: string;
  slug: string;
  metadata: Record<string, string>;
}

export interface EnvironmentFields {
  id: string;
  name: string;
  metadata: Record<string, string>;
}

export interface VersionFields {
  id: string;
  tag: string;
  name?: string | null;
  status: string;
  metadata: Record<string, string>;
  config: Record<string, unknown>;
}

/** The fields each identifier exposes, picked from a record (extra fields are not visible to CEL). */
export const selectorContext = {
  resource: (r: ResourceFields): ResourceFields => ({
    kind: r.kind,
    version: r.version,
    name: r.name,
    identifier: r.identifier,
    metadata: r.metadata,
    config: r.config,
  }),
  deployment: (d: DeploymentFields): DeploymentFields => ({
    id: d.id,
    name: d.name,
    slug: d.slug,
    metadata: d.metadata,
  }),
  environment: (e: EnvironmentFields): EnvironmentFields => ({
    id: e.id,
    name: e.name,
    metadata: e.metadata,
  }),
  version: (v: VersionFields) => ({
    id: v.id,
    tag: v.tag,
    name: v.name ?? '',
    status: v.status,
    metadata: v.metadata,
    config: v.config,
  }),
  event: (e: AuditEventFields) => ({
    id: e.id,
    createdAt: new Date(e.createdAt).toISOString(),
    action: e.action,
    actor: { type: e.actorType, id: e.actorId, name: e.actorName },
    record: { type: e.recordType, id: e.recordId },
    requestId: e.requestId ?? '',
    changes: e.changes,
    deploymentId: e.deploymentId ?? '',
  }),
};

/** An audit event as stored (db/entities/auditEvent.ts), what a list filter reads of it. */
export interface AuditEventFields {
  id: string;
  createdAt: Date | number;
  action: string;
  actorType: string;
  actorId: string;
  actorName: string;
  recordType: string;
  recordId: string;
  requestId: string | null;
  changes: string[];
  deploymentId: string | null;
}

/** The scopes whose expressions select one kind of stored record: list filters, selector inputs. */
export type RecordScope = keyof typeof selectorContext;

/** What an expression of a record scope sees of one record. */
export function recordContext(scope: RecordScope, record: unknown): SelectorContext {
  const fields = selectorContext[scope] as (record: unknown) => unknown;
  return { [scope]: fields(record) };
}
