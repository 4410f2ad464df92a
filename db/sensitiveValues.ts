import { ValidationError } from '../domain/errors';
import { isRedactedMarker, REDACTED, SEALED_MARKER_KEY, SENSITIVE_CONFIG_KEYS } from '../domain/sensitive';
import { SecretBox, type RecordSecrets } from './secrets';

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
  box: RecordSecrets,
  config: Config,
  previous: Config | undefined,
  path: string,
): Config {
  const sealed: Config = {};
  for (const [key, value] of Object.entries(config)) {
    if (!SENSITIVE_CONFIG_KEYS.has(key)) {
      refuseNestedSecrets(value, `${path}.${key}`);
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

type ProbeHeaders = Record<string, unknown>;

type ProbeMetric = { provider?: { headers?: ProbeHeaders } };

/** Each HTTP metric's headers mapped by `visit` (given the metric's index); other metrics as they are. */
function mapMetricHeaders<M>(
  metrics: readonly M[],
  visit: (headers: ProbeHeaders, metric: number) => ProbeHeaders,
): M[] {
  return metrics.map((metric, index) => {
    const { provider } = metric as ProbeMetric;
    return provider?.headers
      ? ({ ...metric, provider: { ...provider, headers: visit(provider.headers, index) } } as M)
      : metric;
  });
}

/** Every HTTP metric's headers in a list of policy rules, by rule id and metric index. */
function eachProbeHeaders(
  rules: readonly Record<string, unknown>[],
  visit: (headers: ProbeHeaders, at: { ruleId: unknown; metric: number }) => ProbeHeaders,
): Record<string, unknown>[] {
  return rules.map((rule) => {
    const verification = rule.verification as { metrics?: ProbeMetric[] } | undefined;
    if (!verification?.metrics) return rule;
    const metrics = mapMetricHeaders(verification.metrics, (headers, metric) =>
      visit(headers, { ruleId: rule.id, metric }),
    );
    return { ...rule, verification: { ...verification, metrics } };
  });
}

/**
 * Seals the header values of a policy's HTTP metrics about to be stored (they are often tokens).
 * `{"sensitive": true}` keeps the value stored for the same rule, metric and header.
 */
export function sealProbeHeaders<R extends Record<string, unknown>>(
  box: RecordSecrets,
  rules: readonly R[],
  previous: readonly Record<string, unknown>[],
): R[] {
  const stored = new Map<string, unknown>();
  eachProbeHeaders(previous, (headers, at) => {
    for (const [name, value] of Object.entries(headers))
      stored.set(`${String(at.ruleId)}|${at.metric}|${name.toLowerCase()}`, value);
    return headers;
  });
  return eachProbeHeaders(rules, (headers, at) =>
    Object.fromEntries(
      Object.entries(headers).map(([name, value]) => {
        if (!isRedactedMarker(value)) return [name, box.seal(String(value))];
        const kept = stored.get(`${String(at.ruleId)}|${at.metric}|${name.toLowerCase()}`);
        if (!SecretBox.isSealed(kept)) {
          throw new ValidationError('A sensitive value can only be kept if one is stored', [
            {
              path: `body.rules.verification.metrics[${at.metric}].provider.headers.${name}`,
              message: 'no stored value to keep; send the value itself',
            },
          ]);
        }
        return [name, kept];
      }),
    ),
  ) as R[];
}

/**
 * A policy's probe headers as a job's verification keeps them: opened as the policy's and sealed
 * again as the release's, so the verification needs neither the policy nor its continued existence.
 */
export function resealMetricHeaders<M>(metrics: readonly M[], from: RecordSecrets, to: RecordSecrets): M[] {
  return mapMetricHeaders(metrics, (headers) =>
    Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [
        name,
        SecretBox.isSealed(value) ? to.seal(from.open(value)) : value,
      ]),
    ),
  );
}

const redactHeaders = (headers: ProbeHeaders) =>
  Object.fromEntries(Object.keys(headers).map((name) => [name, REDACTED]));

/** Policy rules as responses show them: probe header values redacted. */
export function redactProbeHeaders<R extends Record<string, unknown>>(rules: readonly R[]): R[] {
  return eachProbeHeaders(rules, redactHeaders) as R[];
}

/** A job verification's metrics as responses show them: probe header values redacted. */
export function redactMetricHeaders<M extends Record<string, unknown>>(metrics: readonly M[]): M[] {
  return mapMetricHeaders(metrics, redactHeaders);
}

/** A probe's stored headers in clear, for its request. */
export function openProbeHeaders(
  box: RecordSecrets,
  headers: ProbeHeaders | undefined,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, value]) => [
      name,
      SecretBox.isSealed(value) ? box.open(value) : String(value),
    ]),
  );
}

/**
 * Secrets are recognised by key at the top level of a configuration only (that is where every agent
 * type reads them). A sensitive key name deeper in the tree would be stored and shown in the clear,
 * so it is refused rather than silently left unprotected.
 */
function refuseNestedSecrets(value: unknown, path: string): void {
  if (typeof value !== 'object' || value === null) return;
  for (const [key, item] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
    if (!Array.isArray(value) && SENSITIVE_CONFIG_KEYS.has(key)) {
      throw new ValidationError('Secrets belong at the top level of a configuration', [
        {
          path: at,
          message: `${key} is protected only at the top level; move it there, or use a sensitive variable`,
        },
      ]);
    }
    refuseNestedSecrets(item, at);
  }
}

/** A stored configuration as responses show it. */
export function redactConfig(config: Config): Config {
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [key, SENSITIVE_CONFIG_KEYS.has(key) ? REDACTED : value]),
  );
}

/** A stored configuration with its secrets in clear, for dispatch. */
export function openConfig(box: RecordSecrets, config: Config): Config {
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      key,
      SENSITIVE_CONFIG_KEYS.has(key) && SecretBox.isSealed(value) ? box.open(value) : value,
    ]),
  );
}

/** A variable value as stored: sealed when sensitive. */
export function storeValue(box: RecordSecrets, value: unknown, sensitive: boolean): unknown {
  return sensitive ? box.sealJson(value) : value;
}

/** A stored variable value as responses show it. */
export function showValue(value: unknown, sensitive: boolean): unknown {
  return sensitive ? REDACTED : value;
}

/** A stored variable value in clear, for resolution at job creation. */
export function openValue(box: RecordSecrets, value: unknown, sensitive: boolean): unknown {
  return sensitive && SecretBox.isSealed(value) ? box.openJson(value) : value;
}

/** A job's sealed values (configuration, dispatch context, probe headers) are its release's. */
export function releaseSecrets(
  box: SecretBox,
  job: { workspaceId: string; releaseId: string },
): RecordSecrets {
  return box.forRecord(job.workspaceId, 'release', job.releaseId);
}

/**
 * Job snapshots (configuration, dispatch context) hold secrets at any depth; each is stored as
 * `{"$sealed": "fd2:…"}` so it can be found again without knowing the shape around it.
 */
export interface SealedValue {
  $sealed: string;
}

export function isSealedValue(value: unknown): value is SealedValue {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as SealedValue)[SEALED_MARKER_KEY] === 'string'
  );
}

export function sealedValue(box: RecordSecrets, value: unknown): SealedValue {
  return { [SEALED_MARKER_KEY]: box.sealJson(value) };
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
export function openTree<T>(box: RecordSecrets, value: T): T {
  return mapTree(value, (sealed) => box.openJson(sealed.$sealed)) as T;
}
