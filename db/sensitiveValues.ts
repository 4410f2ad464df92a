import { ValidationError } from '../domain/errors';
import { isRedactedMarker, REDACTED, SENSITIVE_CONFIG_KEYS } from '../domain/sensitive';
import { SecretBox } from './secrets';

/**
 * Sealing and redaction of sensitive values, in one place: agent configurations (by key name) and
 * variable values (by their `sensitive` flag).
 */

export type Config = Record<string, unknown>;

/**
 * Seals the sensitive keys of a configuration about to be stored. The marker `{"sensitive": true}`
 * keeps the value already stored under that key (`previous`), so responses can be written back.
 */
export function sealConfig(
  box: SecretBox,
  config: Config,
  previous: Config | undefined,
  path: string,
): Config {
  const sealed: Config = {};
  for (const [key, value] of Object.entries(config)) {
    if (!SENSITIVE_CONFIG_KEYS.has(key)) {
      sealed[key] = value;
    } else if (isRedactedMarker(value)) {
      if (!SecretBox.isSealed(previous?.[key])) {
        throw new ValidationError('A sensitive value can only be kept if one is stored', [
          { path: `${path}.${key}`, message: 'no stored value to keep; send the value itself' },
        ]);
      }
      sealed[key] = previous[key];
    } else {
      sealed[key] = box.seal(typeof value === 'string' ? value : JSON.stringify(value));
    }
  }
  return sealed;
}

/** A stored configuration as responses show it. */
export function redactConfig(config: Config): Config {
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [key, SENSITIVE_CONFIG_KEYS.has(key) ? REDACTED : value]),
  );
}

/** A stored configuration with its secrets in clear, for dispatch. */
export function openConfig(box: SecretBox, config: Config): Config {
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      key,
      SENSITIVE_CONFIG_KEYS.has(key) && SecretBox.isSealed(value) ? box.open(value) : value,
    ]),
  );
}

/** A variable value as stored: sealed when sensitive. */
export function storeValue(box: SecretBox, value: unknown, sensitive: boolean): unknown {
  return sensitive ? box.sealJson(value) : value;
}

/** A stored variable value as responses show it. */
export function showValue(value: unknown, sensitive: boolean): unknown {
  return sensitive ? REDACTED : value;
}

/** A stored variable value in clear, for resolution at job creation. */
export function openValue(box: SecretBox, value: unknown, sensitive: boolean): unknown {
  return sensitive && SecretBox.isSealed(value) ? box.openJson(value) : value;
}

/**
 * Job snapshots (configuration, dispatch context) hold secrets at any depth; each is stored as
 * `{"$sealed": "fd1:…"}` so it can be found again without knowing the shape around it.
 */
export interface SealedValue {
  $sealed: string;
}

export function isSealedValue(value: unknown): value is SealedValue {
  return typeof value === 'object' && value !== null && typeof (value as SealedValue).$sealed === 'string';
}

export function sealedValue(box: SecretBox, value: unknown): SealedValue {
  return { $sealed: box.sealJson(value) };
}

function mapTree(value: unknown, leaf: (sealed: SealedValue) => unknown): unknown {
  if (isSealedValue(value)) return leaf(value);
  if (Array.isArray(value)) return value.map((item) => mapTree(item, leaf));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapTree(item, leaf)]));
  }
  return value;
}

/** A snapshot as responses show it: every sealed value becomes `{"sensitive": true}`. */
export function redactTree<T>(value: T): T {
  return mapTree(value, () => REDACTED) as T;
}

/** A snapshot with its secrets in clear: for the agent that runs the job, and nobody else. */
export function openTree<T>(box: SecretBox, value: T): T {
  return mapTree(value, (sealed) => box.openJson(sealed.$sealed)) as T;
}
