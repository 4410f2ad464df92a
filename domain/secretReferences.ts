import { ValidationError } from './errors';

/**
 * A credential field may hold a reference to a workspace secret, `secret://<name>`, instead of the
 * credential itself (docs/security.md "Workspace secrets"). A reference is not a secret: it is stored and
 * answered as written, so a declarative client reads back what it sent, and resolved only where the
 * credential is used.
 */
export const SECRET_REFERENCE_PREFIX = 'secret://';

/** A workspace secret's name: letters, digits, `.`, `_` and `-`, up to 128 characters. */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether a value is written as a reference (well-formed or not: a malformed one is refused, never sealed). */
export function looksLikeSecretReference(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(SECRET_REFERENCE_PREFIX);
}

/** The secret a reference names; a ValidationError at `path` when the name is not one a secret can have. */
export function secretReferenceName(value: string, path: string): string {
  const name = value.slice(SECRET_REFERENCE_PREFIX.length);
  if (!SECRET_NAME_PATTERN.test(name))
    throw new ValidationError('A secret reference names a workspace secret', [
      {
        path,
        message: `"${value.slice(0, 160)}" is not secret://<name> with a name of letters, digits, ".", "_" and "-" (at most 128)`,
      },
    ]);
  return name;
}

/** A reference found in a record, with the request path it was written at. */
export interface SecretReference {
  name: string;
  path: string;
}

/** Every reference in a tree of values (objects and arrays), with its path under `path`. */
export function secretReferencesIn(value: unknown, path: string): SecretReference[] {
  if (looksLikeSecretReference(value)) return [{ name: secretReferenceName(value, path), path }];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) =>
    secretReferencesIn(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`),
  );
}

/** The tree with each reference replaced by its secret's value (`values` by name; every name present). */
export function replaceSecretReferences<T>(value: T, values: ReadonlyMap<string, string>): T {
  if (looksLikeSecretReference(value))
    return (values.get(value.slice(SECRET_REFERENCE_PREFIX.length)) ?? value) as T;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item: unknown) => replaceSecretReferences(item, values)) as T;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, replaceSecretReferences(item, values)]),
  ) as T;
}
