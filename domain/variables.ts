/**
 * Deployment variables (docs/behaviour.md "Variables", docs/design.md "Decisions") and variable
 * sets (Ctrlplane's), resolved together for each release. A value is a JSON literal or a reference
 * into a related record: `{reference: 'resource', path: ['metadata', 'region']}`.
 */
export const VARIABLE_REFERENCES = ['workspace', 'deployment', 'environment', 'resource', 'version'] as const;
export type VariableReferenceTarget = (typeof VARIABLE_REFERENCES)[number];

export interface VariableReference {
  /** One of `VARIABLE_REFERENCES`, or the reference name of a relationship rule (domain/relationships.ts). */
  reference: string;
  path: string[];
}

export function isBuiltinReference(reference: string): reference is VariableReferenceTarget {
  return (VARIABLE_REFERENCES as readonly string[]).includes(reference);
}

/** A deployment variable with its values, secrets already opened (resolution runs where they may be read). */
export interface VariableDefinition {
  key: string;
  sensitive: boolean;
  defaultValue?: unknown;
  values: {
    id: string;
    priority: number;
    value?: unknown;
    reference?: VariableReference | null;
    resourceSelector: string | null;
    sensitive: boolean;
  }[];
}

export interface ResourceVariableValue {
  key: string;
  value: unknown;
  sensitive: boolean;
}

/** The records a reference may point into, as plain objects; `related` by relationship reference name. */
export type ReferenceTargets = Record<VariableReferenceTarget, Record<string, unknown>> & {
  related?: Readonly<Record<string, object>>;
};

/**
 * A variable set (Ctrlplane's): values for every release target its selector (CEL over `resource`,
 * `deployment` and `environment`) matches, secrets already opened.
 */
export interface VariableSetDefinition {
  id: string;
  name: string;
  priority: number;
  selector: string;
  variables: {
    key: string;
    value?: unknown;
    reference?: VariableReference | null;
    sensitive: boolean;
  }[];
}

/** What one release's variables are resolved from. */
export interface VariableSources {
  /** The deployment's variables. */
  definitions: readonly VariableDefinition[];
  /** The resource's own variables. */
  resource: readonly ResourceVariableValue[];
  /** The workspace's variable sets, matching or not. */
  sets: readonly VariableSetDefinition[];
}

/** Selector checks for the release being resolved. */
export interface VariableMatchers {
  /** A deployment variable value's resource selector. */
  resource(selector: string): boolean;
  /** A variable set's selector, over the release target. */
  target(selector: string): boolean;
}

export interface ResolvedVariable {
  key: string;
  value: unknown;
  sensitive: boolean;
  source: 'resource' | 'value' | 'variable_set' | 'default';
  /** The deployment variable value chosen, when the source is a value. */
  valueId?: string;
  /** That value's priority and resource selector. */
  priority?: number;
  resourceSelector?: string | null;
  /** The variable set chosen, when the source is a variable set. */
  variableSetId?: string;
  variableSetName?: string;
  /** The reference the value was read through, when it is one. */
  reference?: VariableReference;
}

/** The relationship reference names (not the records a reference reaches directly) these variables use. */
export function relationshipReferencesOf(
  definitions: readonly VariableDefinition[],
  sets: readonly VariableSetDefinition[],
): Set<string> {
  const references = [
    ...definitions.flatMap((definition) => definition.values.map((value) => value.reference)),
    ...sets.flatMap((set) => set.variables.map((variable) => variable.reference)),
  ];
  return new Set(
    references.flatMap((reference) =>
      reference && !isBuiltinReference(reference.reference) ? [reference.reference] : [],
    ),
  );
}

/**
 * Fields of the records a reference reaches that hold job agent configurations, and with them
 * credentials: a reference never reads them. A path into one is refused when it is written
 * (`unreadableReference`), and the records references resolve against leave them out
 * (`referenceView`), so a reference stored before it was refused resolves to nothing.
 */
const UNREADABLE_FIELDS: Partial<Record<VariableReferenceTarget, readonly string[]>> = {
  deployment: ['jobAgents', 'jobAgentConfig'],
  version: ['jobAgentConfig'],
};

/** Why a reference may not be written, or undefined when it may. */
export function unreadableReference(reference: VariableReference): string | undefined {
  const [field] = reference.path;
  if (!isBuiltinReference(reference.reference) || field === undefined) return undefined;
  return UNREADABLE_FIELDS[reference.reference]?.includes(field)
    ? `${reference.reference}.${field} holds job agent configurations and their credentials, which references cannot read`
    : undefined;
}

/** A record as references see it: without the fields that hold agent configurations. */
export function referenceView(
  target: VariableReferenceTarget,
  record: Record<string, unknown>,
): Record<string, unknown> {
  const hidden = UNREADABLE_FIELDS[target] ?? [];
  return Object.fromEntries(Object.entries(record).filter(([key]) => !hidden.includes(key)));
}

/** Follows a reference's path; undefined when any step is missing. */
export function followReference(reference: VariableReference, targets: ReferenceTargets): unknown {
  let current: unknown = isBuiltinReference(reference.reference)
    ? targets[reference.reference]
    : targets.related?.[reference.reference];
  for (const step of reference.path) {
    if (current === null || typeof current !== 'object' || !(step in current)) return undefined;
    current = (current as Record<string, unknown>)[step];
  }
  return current;
}

/**
 * The variable sets that apply to a release target, in precedence order: higher priority first,
 * then by name (and id), so two sets of equal priority always resolve the same way.
 */
export function matchingVariableSets(
  sets: readonly VariableSetDefinition[],
  matchesTarget: (selector: string) => boolean,
): VariableSetDefinition[] {
  return sets
    .filter((set) => matchesTarget(set.selector))
    .sort(
      (a, b) =>
        b.priority - a.priority ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}

/**
 * Resolves the variables of one release (docs/design.md "Decisions": variable precedence, and Ctrlplane's variable sets). For each key a
 * deployment variable or a matching variable set defines, the first of these that gives a value
 * wins:
 *
 * 1. the resource's own variable of that key;
 * 2. the deployment variable's values whose selector matches the resource, highest priority first;
 * 3. the variable sets whose selector matches the release target, highest priority first (ties by
 *    name);
 * 4. the deployment variable's default.
 *
 * A reference that leads nowhere is skipped, and a key nothing resolves is left out. A value is
 * sensitive when the deployment variable, or the value, resource variable or set variable chosen,
 * says so.
 */
export function resolveVariables(
  sources: VariableSources,
  targets: ReferenceTargets,
  matches: VariableMatchers,
): ResolvedVariable[] {
  const own = new Map(sources.resource.map((variable) => [variable.key, variable]));
  const valueOf = (candidate: { value?: unknown; reference?: VariableReference | null }) =>
    candidate.reference ? followReference(candidate.reference, targets) : candidate.value;
  // Each key's value from the sets, taken from the first set (in precedence order) that resolves it.
  const setKeys = new Set<string>();
  const fromSets = new Map<string, ResolvedVariable>();
  for (const set of matchingVariableSets(sources.sets, matches.target)) {
    for (const variable of set.variables) {
      setKeys.add(variable.key);
      if (fromSets.has(variable.key)) continue;
      const value = valueOf(variable);
      if (value === undefined) continue;
      fromSets.set(variable.key, {
        key: variable.key,
        value,
        sensitive: variable.sensitive,
        source: 'variable_set',
        variableSetId: set.id,
        variableSetName: set.name,
        ...(variable.reference ? { reference: variable.reference } : {}),
      });
    }
  }

  const resolveKey = (key: string, definition?: VariableDefinition): ResolvedVariable | undefined => {
    const keySensitive = definition?.sensitive ?? false;
    const fromResource = own.get(key);
    if (fromResource) {
      return {
        key,
        value: fromResource.value,
        sensitive: keySensitive || fromResource.sensitive,
        source: 'resource',
      };
    }
    const fromValue = [...(definition?.values ?? [])]
      .sort((a, b) => b.priority - a.priority || a.id.localeCompare(b.id))
      .filter(
        (candidate) => candidate.resourceSelector === null || matches.resource(candidate.resourceSelector),
      )
      .map((candidate) => ({ candidate, value: valueOf(candidate) }))
      .find(({ value }) => value !== undefined);
    if (fromValue) {
      return {
        key,
        value: fromValue.value,
        sensitive: keySensitive || fromValue.candidate.sensitive,
        source: 'value',
        valueId: fromValue.candidate.id,
        priority: fromValue.candidate.priority,
        resourceSelector: fromValue.candidate.resourceSelector,
        ...(fromValue.candidate.reference ? { reference: fromValue.candidate.reference } : {}),
      };
    }
    const fromSet = fromSets.get(key);
    if (fromSet) return { ...fromSet, sensitive: keySensitive || fromSet.sensitive };
    if (definition?.defaultValue !== undefined && definition.defaultValue !== null) {
      return { key, value: definition.defaultValue, sensitive: keySensitive, source: 'default' };
    }
    return undefined;
  };

  const definedKeys = new Set(sources.definitions.map((definition) => definition.key));
  const setOnlyKeys = [...setKeys].filter((key) => !definedKeys.has(key)).sort();
  return [
    ...sources.definitions.map((definition) => resolveKey(definition.key, definition)),
    ...setOnlyKeys.map((key) => resolveKey(key)),
  ].filter((variable): variable is ResolvedVariable => variable !== undefined);
}
