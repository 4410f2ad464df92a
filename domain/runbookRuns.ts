import { ValidationError, type FieldIssue } from './errors';
import { AGENT_OWNED_KEYS, agentSelectorContext } from './jobAgents';
import type { JobAgentType } from './jobAgentTypes';
import { deepMerge, type JsonObject } from './jobConfig';
import { checkSelector, describeProblem, selectorMatches } from './selectors';
import { fillTemplate, TemplateError } from './templates';

/**
 * Runbooks (what Ctrlplane's API calls "workflows", at `/workflows`; inside Flightdeck "workflow"
 * means a Temporal workflow only): a named template of typed inputs and job agent entries. A run
 * takes input values, fans out one job per matched resource (or one in all when the runbook selects
 * no resources) for each entry whose CEL selector matches, and fills the entry's configuration from
 * the inputs. Everything here is pure; application/runbooks.ts loads and writes.
 */

export type SelectorEntityType = 'resource' | 'environment' | 'deployment';

export type RunbookInputDeclaration =
  | { key: string; type: 'string'; default?: string }
  | { key: string; type: 'number'; default?: number }
  | { key: string; type: 'boolean'; default?: boolean }
  | { key: string; type: 'object'; default?: JsonObject }
  | { key: string; type: 'array'; default?: JsonObject[] }
  | { key: string; type: 'array'; selector: { entityType: SelectorEntityType; default?: string } };

export interface RunbookAgentEntry {
  name: string;
  /** The job agent's id or name, in the runbook's workspace. */
  ref: string;
  config: JsonObject;
  /** CEL over `inputs`, the entry's `jobAgent` and, when the run fans out over resources, `resource`. */
  selector: string;
}

/**
 * The input key Ctrlplane reserves for a run's fan-out: a `string` input so named holds CEL over
 * resources, and the run makes its jobs once per resource it selects (once in all when it is empty).
 * Its value stays the expression; an `array` input with a `selector` is the other way to fan out.
 */
export const RESOURCE_SELECTOR_INPUT = 'resourceSelector';

/** Jobs one run may create: a larger fan-out is refused before anything is written. */
export const MAX_RUN_JOBS = 1000;
/** Entities a selector input may select. */
export const MAX_SELECTED_ENTITIES = 1000;
/** The run's input values, as JSON. */
export const MAX_RUN_INPUT_BYTES = 64 * 1024;

/** A selector input: its expression as given (or its default) and what it selects. */
export interface SelectorInput {
  key: string;
  entityType: SelectorEntityType;
  expression: string;
  /** Whether the input's value becomes the entities selected (an `array` input) or stays the expression. */
  replacesValue: boolean;
}

export interface ResolvedRunInputs {
  /** Plain values, with defaults filled in; selector inputs hold their expression. */
  values: JsonObject;
  selectors: SelectorInput[];
}

const isSelectorInput = (
  declaration: RunbookInputDeclaration,
): declaration is Extract<RunbookInputDeclaration, { selector: unknown }> => 'selector' in declaration;

const isResourceSelectorString = (declaration: RunbookInputDeclaration): boolean =>
  declaration.type === 'string' && declaration.key === RESOURCE_SELECTOR_INPUT;

/** The reserved string's expression, or nothing when it selects no resources (blank). */
const fanOutExpression = (value: string): string | undefined => (value.trim() === '' ? undefined : value);

function celProblem(entityType: SelectorEntityType, expression: string): string | undefined {
  const problem = checkSelector(entityType, expression);
  return problem ? `invalid CEL: ${describeProblem(problem)}` : undefined;
}

const isPlainObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function typeProblem(declaration: RunbookInputDeclaration, value: unknown): string | undefined {
  switch (declaration.type) {
    case 'string': {
      if (typeof value !== 'string') return 'must be a string';
      const expression = isResourceSelectorString(declaration) ? fanOutExpression(value) : undefined;
      return expression === undefined ? undefined : celProblem('resource', expression);
    }
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'object':
      return isPlainObject(value) ? undefined : 'must be an object';
    case 'array':
      if (isSelectorInput(declaration)) {
        if (typeof value !== 'string')
          return `must be a CEL expression selecting ${declaration.selector.entityType}s`;
        return celProblem(declaration.selector.entityType, value);
      }
      return Array.isArray(value) && value.every(isPlainObject) ? undefined : 'must be an array of objects';
  }
}

/** Problems of a runbook's declarations themselves: duplicate keys, defaults of the wrong type. */
export function checkInputDeclarations(declarations: readonly RunbookInputDeclaration[]): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const seen = new Set<string>();
  declarations.forEach((declaration, index) => {
    if (seen.has(declaration.key))
      issues.push({
        path: `body.inputs[${index}].key`,
        message: `input ${declaration.key} is declared twice`,
      });
    seen.add(declaration.key);
    const fallback = isSelectorInput(declaration) ? declaration.selector.default : declaration.default;
    const problem = fallback === undefined ? undefined : typeProblem(declaration, fallback);
    if (problem) issues.push({ path: `body.inputs[${index}].default`, message: problem });
  });
  return issues;
}

/**
 * A run's input values checked against the runbook's declarations: each given value has its
 * declared type, an undeclared key is refused, and a missing one takes its default or is refused.
 */
export function resolveRunInputs(
  declarations: readonly RunbookInputDeclaration[],
  given: JsonObject,
): ResolvedRunInputs {
  const issues: FieldIssue[] = [];
  if (JSON.stringify(given).length > MAX_RUN_INPUT_BYTES)
    issues.push({ path: 'body.inputs', message: `must be at most ${MAX_RUN_INPUT_BYTES} bytes as JSON` });
  const declared = new Map(declarations.map((declaration) => [declaration.key, declaration]));
  for (const key of Object.keys(given)) {
    if (!declared.has(key))
      issues.push({ path: `body.inputs.${key}`, message: 'the workflow declares no such input' });
  }
  const values: JsonObject = {};
  const selectors: SelectorInput[] = [];
  for (const declaration of declarations) {
    const path = `body.inputs.${declaration.key}`;
    const fallback = isSelectorInput(declaration) ? declaration.selector.default : declaration.default;
    const value = Object.hasOwn(given, declaration.key) ? given[declaration.key] : fallback;
    if (value === undefined) {
      issues.push({ path, message: 'required: the input has no default' });
      continue;
    }
    const problem = typeProblem(declaration, value);
    if (problem) {
      issues.push({ path, message: problem });
      continue;
    }
    values[declaration.key] = value;
    if (isSelectorInput(declaration))
      selectors.push({
        key: declaration.key,
        entityType: declaration.selector.entityType,
        expression: value as string,
        replacesValue: true,
      });
    const fanOut = isResourceSelectorString(declaration) ? fanOutExpression(value as string) : undefined;
    if (fanOut !== undefined)
      selectors.push({
        key: declaration.key,
        entityType: 'resource',
        expression: fanOut,
        replacesValue: false,
      });
  }
  if (issues.length > 0) throw new ValidationError('The run inputs do not fit the workflow', issues);
  return { values, selectors };
}

/** A job agent as a run needs it. */
export interface RunAgent {
  id: string;
  name: string;
  type: JobAgentType;
  config: JsonObject;
  metadata?: Record<string, string>;
}

/** A resource a run fans out over, as its selectors and templates see it. */
export type RunResource = JsonObject & { id: string };

export interface RunJobPlan {
  agent: RunAgent;
  entry: number;
  resource: RunResource | null;
  /** The agent's configuration under the entry's, filled from the run context; secrets not yet sealed. */
  config: JsonObject;
  /** What the job's templates and agents see: the runbook (as `workflow`), the run, its inputs, the resource. */
  context: JsonObject;
}

export interface RunPlanInput {
  runbook: { id: string; name: string; slug: string };
  runId: string;
  entries: readonly RunbookAgentEntry[];
  /** Input values, each selector input's replaced by the entities it selected. */
  inputs: JsonObject;
  /** The resources the run fans out over: null when no input selects resources. */
  resources: readonly RunResource[] | null;
  agents: readonly RunAgent[];
}

/**
 * The jobs of a run: for each resource (or once, when the runbook selects none), each entry whose
 * selector matches. An entry naming an agent the workspace does not have (a runbook may name one
 * before it is registered, as Ctrlplane allows), a template naming a path the run does not have,
 * or a fan-out beyond MAX_RUN_JOBS refuses the run, before anything is written.
 */
export function planRunbookRun(input: RunPlanInput): RunJobPlan[] {
  const targets: (RunResource | null)[] = input.resources ? [...input.resources] : [null];
  const plans: RunJobPlan[] = [];
  const issues: FieldIssue[] = [];
  // Each entry's agent, and the agent as its selector sees it, once for every resource.
  const entryAgents = input.entries.map((entry, index) => {
    const agent = input.agents.find(
      (candidate) => candidate.id === entry.ref || candidate.name === entry.ref,
    );
    if (!agent)
      issues.push({
        path: `jobAgents[${index}].ref`,
        message: `no job agent ${entry.ref} in this workspace`,
      });
    return agent && { agent, seen: agentSelectorContext(agent) };
  });
  for (const resource of targets) {
    const context: JsonObject = {
      // Templates name the runbook `workflow` (`{{ workflow.slug }}`, docs/api.md "Workflows"), as saved
      // templates write it.
      workflow: input.runbook,
      run: { id: input.runId },
      inputs: input.inputs,
      ...(resource ? { resource } : {}),
    };
    input.entries.forEach((entry, index) => {
      const found = entryAgents[index];
      if (!found) return;
      const { agent, seen } = found;
      const scope = { inputs: input.inputs, resource: resource ?? {}, jobAgent: seen };
      if (!selectorMatches('workflowJob', entry.selector, scope)) return;
      let filled: JsonObject;
      try {
        filled = fillTemplate(entry.config, context) as JsonObject;
      } catch (error) {
        if (!(error instanceof TemplateError)) throw error;
        issues.push({ path: `jobAgents[${index}].config`, message: error.message });
        return;
      }
      const config = deepMerge(agent.config, filled);
      for (const key of AGENT_OWNED_KEYS[agent.type]) {
        if (key in agent.config) config[key] = agent.config[key];
        else delete config[key];
      }
      plans.push({ agent, entry: index, resource, config, context });
    });
  }
  if (issues.length > 0)
    throw new ValidationError(
      'The workflow cannot run as it stands',
      dedupe(issues),
      'workflow_not_runnable',
    );
  if (plans.length > MAX_RUN_JOBS) {
    throw new ValidationError(
      `The run would create ${plans.length} jobs; at most ${MAX_RUN_JOBS} are allowed`,
      [{ path: 'body.inputs', message: 'select fewer resources' }],
      'run_too_large',
    );
  }
  return plans;
}

function dedupe(issues: FieldIssue[]): FieldIssue[] {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
