import { metricProviderDestination, refuseMovedCredentials } from '../domain/credentialBinding';
import { ValidationError } from '../domain/errors';
import { isRedactedMarker, REDACTED, SEALED_MARKER_KEY, SENSITIVE_CONFIG_KEYS } from '../domain/sensitive';
import {
  looksLikeSecretReference,
  secretReferenceName,
  secretReferencesIn,
  type SecretReference,
} from '../domain/secretReferences';
import { SecretBox, type RecordSecrets } from './secrets';

/**
 * Sealing and redaction of sensitive values, in one place: agent configurations (by key name) and
 * variable values (by their `sensitive` flag).
 */

export type Config = Record<string, unknown>;

/** The request paths of the keys of `config` that keep a secret stored in `previous` (`{"sensitive": true}`). */
export function keptSecrets(config: Config, previous: Config | undefined, path: string): string[] {
  return Object.entries(config)
    .filter(
      ([key, value]) =>
        SENSITIVE_CONFIG_KEYS.has(key) && isRedactedMarker(value) && SecretBox.isSealed(previous?.[key]),
    )
    .map(([key]) => `${path}.${key}`);
}

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
    } else if (looksLikeSecretReference(value)) {
      secretReferenceName(value, `${path}.${key}`);
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

type ProbeSecrets = Record<string, unknown>;

type ProbeProvider = Record<string, unknown> & { type?: string; headers?: ProbeSecrets };

/**
 * Where each metric provider keeps credentials, as paths into the provider: an HTTP probe's header
 * values (often tokens), the other providers' keys and tokens.
 */
const PROVIDER_SECRET_PATHS: Record<string, readonly (readonly string[])[]> = {
  datadog: [['apiKey'], ['appKey']],
  prometheus: [
    ['authentication', 'bearerToken'],
    ['authentication', 'oauth2', 'clientSecret'],
  ],
  terraformCloudRun: [['token']],
};

const slotPaths = (provider: ProbeProvider): (readonly string[])[] =>
  provider.type === 'http'
    ? Object.keys(provider.headers ?? {}).map((name) => ['headers', name])
    : [...(PROVIDER_SECRET_PATHS[provider.type ?? ''] ?? [])];

const slotName = (path: readonly string[]) => path.join('.');

const read = (node: unknown, path: readonly string[]): unknown =>
  path.reduce<unknown>(
    (value, key) => (value !== null && typeof value === 'object' ? (value as ProbeSecrets)[key] : undefined),
    node,
  );

function write(node: ProbeSecrets, path: readonly string[], value: unknown): ProbeSecrets {
  const [key, ...rest] = path as [string, ...string[]];
  return {
    ...node,
    [key]: rest.length === 0 ? value : write((node[key] ?? {}) as ProbeSecrets, rest, value),
  };
}

/** A provider's credentials by slot (`headers.Authorization`, `apiKey`, `authentication.bearerToken`…). */
function secretsOf(provider: ProbeProvider): ProbeSecrets {
  return Object.fromEntries(
    slotPaths(provider)
      .map((path) => [slotName(path), read(provider, path)] as const)
      .filter(([, value]) => value !== undefined),
  );
}

/** The provider with each slot of `secrets` written back. */
function withSecrets(provider: ProbeProvider, secrets: ProbeSecrets): ProbeProvider {
  return slotPaths(provider).reduce<ProbeProvider>((node, path) => {
    const name = slotName(path);
    return name in secrets ? (write(node, path, secrets[name]) as ProbeProvider) : node;
  }, provider);
}

type ProbeMetric = { provider?: ProbeProvider };

/** Each metric's provider credentials mapped by `visit` (given the metric's index and provider). */
function mapMetricSecrets<M>(
  metrics: readonly M[],
  visit: (secrets: ProbeSecrets, metric: number, provider: ProbeProvider) => ProbeSecrets,
): M[] {
  return metrics.map((metric, index) => {
    const { provider } = metric as ProbeMetric;
    if (!provider) return metric;
    const secrets = secretsOf(provider);
    if (Object.keys(secrets).length === 0) return metric;
    return { ...metric, provider: withSecrets(provider, visit(secrets, index, provider)) } as M;
  });
}

interface ProbeSlot {
  ruleId: unknown;
  /** The rule's index in the list. */
  rule: number;
  metric: number;
  provider: ProbeProvider;
}

/** Every metric's provider credentials in a list of policy rules, by rule and metric. */
function eachProbeSecrets(
  rules: readonly Record<string, unknown>[],
  visit: (secrets: ProbeSecrets, at: ProbeSlot) => ProbeSecrets,
): Record<string, unknown>[] {
  return rules.map((rule, index) => {
    const verification = rule.verification as { metrics?: ProbeMetric[] } | undefined;
    if (!verification?.metrics) return rule;
    const metrics = mapMetricSecrets(verification.metrics, (secrets, metric, provider) =>
      visit(secrets, { ruleId: rule.id, rule: index, metric, provider }),
    );
    return { ...rule, verification: { ...verification, metrics } };
  });
}

/**
 * Seals the credentials of a policy's metric providers about to be stored (HTTP header values,
 * Datadog keys, Prometheus and Terraform Cloud tokens). `{"sensitive": true}` keeps the value stored
 * for the same rule, metric and slot, as long as the provider's type and addresses stay the same
 * (domain/credentialBinding.ts).
 */
export function sealProbeHeaders<R extends Record<string, unknown>>(
  box: RecordSecrets,
  rules: readonly R[],
  previous: readonly Record<string, unknown>[],
): R[] {
  const metricOf = (at: ProbeSlot) => `${String(at.ruleId)}|${at.metric}`;
  const stored = new Map<string, unknown>();
  const destinations = new Map<string, string>();
  eachProbeSecrets(previous, (secrets, at) => {
    destinations.set(metricOf(at), metricProviderDestination(at.provider));
    for (const [name, value] of Object.entries(secrets))
      stored.set(`${metricOf(at)}|${name.toLowerCase()}`, value);
    return secrets;
  });
  return eachProbeSecrets(rules, (secrets, at) => {
    const path = (name: string) => probePath(at, name);
    const storedFor = (name: string) => stored.get(`${metricOf(at)}|${name.toLowerCase()}`);
    refuseMovedCredentials(
      Object.entries(secrets)
        .filter(([name, value]) => isRedactedMarker(value) && SecretBox.isSealed(storedFor(name)))
        .map(([name]) => path(name)),
      destinations.get(metricOf(at)),
      metricProviderDestination(at.provider),
    );
    return Object.fromEntries(
      Object.entries(secrets).map(([name, value]) => {
        if (looksLikeSecretReference(value)) {
          secretReferenceName(value, path(name)); // a malformed reference is refused, not sealed
          return [name, value];
        }
        if (!isRedactedMarker(value)) return [name, box.seal(String(value))];
        const kept = storedFor(name);
        if (!SecretBox.isSealed(kept)) {
          throw new ValidationError('A sensitive value can only be kept if one is stored', [
            { path: path(name), message: 'no stored value to keep; send the value itself' },
          ]);
        }
        return [name, kept];
      }),
    );
  }) as R[];
}

/** Where a request wrote a metric provider's credential. */
const probePath = (at: ProbeSlot, name: string) =>
  `body.rules[${at.rule}].verification.metrics[${at.metric}].provider.${name}`;

/** The references to workspace secrets among policy rules' provider credentials, with each provider's destination. */
export function probeSecretReferences(
  rules: readonly Record<string, unknown>[],
): { destination: string; references: SecretReference[] }[] {
  const found: { destination: string; references: SecretReference[] }[] = [];
  eachProbeSecrets(rules, (secrets, at) => {
    const references = Object.entries(secrets).flatMap(([name, value]) =>
      secretReferencesIn(value, probePath(at, name)),
    );
    if (references.length > 0)
      found.push({ destination: metricProviderDestination(at.provider), references });
    return secrets;
  });
  return found;
}

/**
 * A policy's probe credentials as a job's verification keeps them: opened as the policy's and sealed
 * again as the release's, so the verification needs neither the policy nor its continued existence.
 */
export function resealMetricHeaders<M>(metrics: readonly M[], from: RecordSecrets, to: RecordSecrets): M[] {
  return mapMetricSecrets(metrics, (secrets) =>
    Object.fromEntries(
      Object.entries(secrets).map(([name, value]) => [
        name,
        SecretBox.isSealed(value) ? to.seal(from.open(value)) : value,
      ]),
    ),
  );
}

/** Credentials redacted; references to workspace secrets are not secrets, and are shown as written. */
const redactSecrets = (secrets: ProbeSecrets) =>
  Object.fromEntries(
    Object.entries(secrets).map(([name, value]) => [
      name,
      looksLikeSecretReference(value) ? value : REDACTED,
    ]),
  );

/** Policy rules as responses show them: probe credentials redacted. */
export function redactProbeHeaders<R extends Record<string, unknown>>(rules: readonly R[]): R[] {
  return eachProbeSecrets(rules, redactSecrets) as R[];
}

/** A job verification's metrics as responses show them: probe credentials redacted. */
export function redactMetricHeaders<M extends Record<string, unknown>>(metrics: readonly M[]): M[] {
  return mapMetricSecrets(metrics, redactSecrets);
}

/** A metric provider with its stored credentials in clear, for its requests. */
export function openProvider<P extends object>(box: RecordSecrets, provider: P): P {
  const secrets = secretsOf(provider as ProbeProvider);
  const opened = Object.fromEntries(
    Object.entries(secrets).map(([name, value]) => [
      name,
      SecretBox.isSealed(value) ? box.open(value) : value,
    ]),
  );
  return withSecrets(provider as ProbeProvider, opened) as P;
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
    Object.entries(config).map(([key, value]) => [
      key,
      SENSITIVE_CONFIG_KEYS.has(key) && !looksLikeSecretReference(value) ? REDACTED : value,
    ]),
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

/** A job's sealed values (configuration, dispatch context, probe headers) are its release's or its runbook run's. */
export function jobSecrets(
  box: SecretBox,
  job: { workspaceId: string; releaseId?: string | null; runbookRunId?: string | null },
): RecordSecrets {
  return job.releaseId
    ? box.forRecord(job.workspaceId, 'release', job.releaseId)
    : box.forRecord(job.workspaceId, 'workflow_run', job.runbookRunId ?? '');
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

/** A metric provider with its credentials mapped by `map` (references to workspace secrets resolved, db/secretReferences.ts). */
export async function mapProviderSecrets<P extends object>(
  provider: P,
  map: (secrets: Record<string, unknown>) => Promise<Record<string, unknown>>,
): Promise<P> {
  const secrets = secretsOf(provider as ProbeProvider);
  if (Object.keys(secrets).length === 0) return provider;
  return withSecrets(provider as ProbeProvider, await map(secrets)) as P;
}
