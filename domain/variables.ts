/**
 * Deployment variables (SPEC "Deployment variable and variable value", DESIGN §6). A value is a
 * JSON literal or a reference into a related record: `{reference: 'resource', path: ['metadata',
 * 'region']}`.
 */
export const VARIABLE_REFERENCES = ['workspace', 'deployment', 'environment', 'resource', 'version'] as const;
export type VariableReferenceTarget = (typeof VARIABLE_REFERENCES)[number];

export interface VariableReference {
  reference: VariableReferenceTarget;
  path: string[];
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

/** The records a reference may point into, as plain objects. */
export type ReferenceTargets = Record<VariableReferenceTarget, Record<string, unknown>>;

export interface ResolvedVariable {
  key: string;
  value: unknown;
  sensitive: boolean;
  source: 'resource' | 'value' | 'default';
  /** The deployment variable value chosen, when the source is a value. */
  valueId?: string;
}

/** Follows a reference's path; undefined when any step is missing. */
export function followReference(reference: VariableReference, targets: ReferenceTargets): unknown {
  let current: unknown = targets[reference.reference];
  for (const step of reference.path) {
    if (current === null || typeof current !== 'object' || !(step in current)) return undefined;
    current = (current as Record<string, unknown>)[step];
  }
  return current;
}

/**
 * Resolves each deployment variable for one release (DESIGN §6): the resource's own variable of
 * that key wins; then the deployment's values whose selector matches the resource, highest
 * priority first (a reference that leads nowhere is skipped); then the default. A key nothing
 * resolves is left out. A value is sensitive when the variable, the value or the resource's
 * variable says so.
 */
export function resolveVariables(
  definitions: readonly VariableDefinition[],
  resourceVariables: readonly ResourceVariableValue[],
  targets: ReferenceTargets,
  matchesResource: (selector: string) => boolean,
): ResolvedVariable[] {
  const own = new Map(resourceVariables.map((variable) => [variable.key, variable]));
  const resolved: ResolvedVariable[] = [];
  for (const definition of definitions) {
    const fromResource = own.get(definition.key);
    if (fromResource) {
      resolved.push({
        key: definition.key,
        value: fromResource.value,
        sensitive: definition.sensitive || fromResource.sensitive,
        source: 'resource',
      });
      continue;
    }
    const candidates = [...definition.values].sort(
      (a, b) => b.priority - a.priority || a.id.localeCompare(b.id),
    );
    const chosen = candidates
      .filter(
        (candidate) => candidate.resourceSelector === null || matchesResource(candidate.resourceSelector),
      )
      .map((candidate) => ({
        candidate,
        value: candidate.reference ? followReference(candidate.reference, targets) : candidate.value,
      }))
      .find(({ value }) => value !== undefined);
    if (chosen) {
      resolved.push({
        key: definition.key,
        value: chosen.value,
        sensitive: definition.sensitive || chosen.candidate.sensitive,
        source: 'value',
        valueId: chosen.candidate.id,
      });
    } else if (definition.defaultValue !== undefined && definition.defaultValue !== null) {
      resolved.push({
        key: definition.key,
        value: definition.defaultValue,
        sensitive: definition.sensitive,
        source: 'default',
      });
    }
  }
  return resolved;
}
