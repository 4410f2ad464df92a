import { isRedactedMarker } from '../../domain/sensitive';

/**
 * How `apply` decides a record is already as the file says. Only the fields a document gives are
 * compared; null and absent are the same. A stored secret reads back as `{"sensitive": true}`, so
 * it compares equal to any value given for it, unless the caller asks to rewrite secrets.
 */

export interface CompareOptions {
  rewriteSecrets: boolean;
}

export function sameValue(desired: unknown, current: unknown, options: CompareOptions): boolean {
  if (desired === undefined || desired === null) return current === undefined || current === null;
  if (isRedactedMarker(current)) return !options.rewriteSecrets;
  if (Array.isArray(desired)) {
    return (
      Array.isArray(current) &&
      desired.length === current.length &&
      desired.every((item, index) => sameValue(item, current[index], options))
    );
  }
  if (isPlainObject(desired)) {
    if (!isPlainObject(current)) return false;
    const keys = new Set([...Object.keys(desired), ...Object.keys(current)]);
    return [...keys].every((key) => sameValue(desired[key], current[key], options));
  }
  return desired === current;
}

/** The fields `desired` gives whose values differ from `current`'s, in `desired`'s order. */
export function changedFields(
  desired: Record<string, unknown>,
  current: Record<string, unknown>,
  options: CompareOptions,
): string[] {
  return Object.keys(desired).filter(
    (key) => desired[key] !== undefined && !sameValue(desired[key], current[key], options),
  );
}

/** `current`'s fields among `keys`, overlaid with every field `desired` gives: a full PUT body. */
export function mergedBody(
  keys: readonly string[],
  current: Record<string, unknown>,
  desired: Record<string, unknown>,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of keys) {
    const value = desired[key] !== undefined ? desired[key] : current[key];
    if (value !== undefined) body[key] = value;
  }
  return body;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
