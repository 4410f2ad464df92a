import type { Metric } from './releaseProgress';
import { RULE_DEFAULTS } from './ruleDefaults';

/**
 * Verification metric providers that measure over HTTP (Ctrlplane's `http`, `prometheus`, `datadog`,
 * `terraformCloudRun`): the request each makes, and the `result` its success and failure conditions
 * (CEL) see. Pure: activities/release.ts sends the request under the egress policy. Every result has
 * `ok`, `statusCode`, `body`, `json` and `durationMs`; each provider adds its own reading:
 *
 * - `prometheus`: `value` (the first series' value; for a range query its last point) and `values`
 *   (a range query's points of the first series), numbers or null;
 * - `datadog`: `value` (the first number column's first value) and `values` (each query or formula
 *   column by name);
 * - `terraformCloudRun`: `status` (the run's status, e.g. `applied`, `errored`).
 */

export type HttpProvider = Exclude<Metric['provider'], { type: 'sleep' }>;

export interface MetricRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** Datadog queries read this far back. */
const DATADOG_WINDOW_MS = 5 * 60_000;

const DURATION_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** A Prometheus duration (`30s`, `5m`) in milliseconds. */
export function promDurationMs(duration: string): number {
  const match = /^(\d+)(ms|s|m|h|d|w)$/.exec(duration);
  if (!match) throw new Error(`not a duration: ${duration}`);
  return Number(match[1]) * DURATION_MS[match[2]!]!;
}

const trimSlash = (address: string) => address.replace(/\/+$/, '');

/**
 * The request a provider makes at `now`. Its secrets must be open; `bearer` is the access token an
 * OAuth2-authenticated Prometheus obtained first (see `oauth2TokenRequest`).
 */
export function metricRequest(provider: HttpProvider, now: Date, bearer?: string): MetricRequest {
  switch (provider.type) {
    case 'http':
      return {
        url: provider.url,
        method: provider.method ?? RULE_DEFAULTS.httpMethod,
        headers: (provider.headers ?? {}) as Record<string, string>,
        ...(provider.body !== undefined ? { body: provider.body } : {}),
        timeoutMs: (provider.timeoutSeconds ?? RULE_DEFAULTS.httpTimeoutSeconds) * 1000,
      };
    case 'prometheus': {
      const params = new URLSearchParams({ query: provider.query });
      let path = '/api/v1/query';
      if (provider.rangeQuery) {
        const step = promDurationMs(provider.rangeQuery.step);
        const end = now.getTime() - (provider.rangeQuery.end ? promDurationMs(provider.rangeQuery.end) : 0);
        const start =
          now.getTime() - (provider.rangeQuery.start ? promDurationMs(provider.rangeQuery.start) : 10 * step);
        params.set('start', String(start / 1000));
        params.set('end', String(end / 1000));
        params.set('step', String(step / 1000));
        path = '/api/v1/query_range';
      } else {
        params.set('time', String(now.getTime() / 1000));
      }
      const headers: Record<string, string> = Object.fromEntries(
        (provider.headers ?? []).map((header) => [header.key, header.value]),
      );
      const token = bearer ?? (provider.authentication?.bearerToken as string | undefined);
      if (token) headers.Authorization = `Bearer ${token}`;
      return {
        url: `${trimSlash(provider.address)}${path}?${params.toString()}`,
        method: 'GET',
        headers,
        timeoutMs: (provider.timeout ?? DEFAULT_TIMEOUT_MS / 1000) * 1000,
      };
    }
    case 'datadog': {
      const names = Object.keys(provider.queries);
      return {
        url: `https://api.${provider.site ?? RULE_DEFAULTS.datadogSite}/api/v2/query/scalar`,
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'DD-API-KEY': provider.apiKey as string,
          'DD-APPLICATION-KEY': provider.appKey as string,
        },
        body: JSON.stringify({
          data: {
            type: 'scalar_request',
            attributes: {
              from: now.getTime() - DATADOG_WINDOW_MS,
              to: now.getTime(),
              queries: names.map((name) => ({
                data_source: 'metrics',
                name,
                query: provider.queries[name],
                aggregator: provider.aggregator ?? RULE_DEFAULTS.datadogAggregator,
              })),
              formulas: [{ formula: provider.formula ?? names[0] }],
            },
          },
        }),
        timeoutMs: DEFAULT_TIMEOUT_MS,
      };
    }
    case 'terraformCloudRun':
      return {
        url: `${trimSlash(provider.address)}/api/v2/runs/${encodeURIComponent(provider.runId)}`,
        method: 'GET',
        headers: {
          Authorization: `Bearer ${provider.token as string}`,
          'Content-Type': 'application/vnd.api+json',
        },
        timeoutMs: DEFAULT_TIMEOUT_MS,
      };
  }
}

/** The OAuth2 client-credentials request an OAuth2-authenticated Prometheus makes first, if it is one. */
export function oauth2TokenRequest(provider: HttpProvider): MetricRequest | undefined {
  if (provider.type !== 'prometheus' || !provider.authentication?.oauth2) return undefined;
  const { tokenUrl, clientId, clientSecret, scopes } = provider.authentication.oauth2;
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: clientId,
    client_secret: clientSecret as string,
  });
  if (scopes?.length) form.set('scope', scopes.join(' '));
  return {
    url: tokenUrl,
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
}

export interface MetricResponse {
  ok: boolean;
  statusCode: number;
  body: string;
  json: unknown;
  durationMs: number;
  error?: string;
}

const numberOf = (value: unknown): number | null => {
  const number = typeof value === 'string' ? Number(value) : typeof value === 'number' ? value : NaN;
  return Number.isFinite(number) ? number : null;
};

const at = (value: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>(
    (node, key) =>
      node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined,
    value,
  );

/** What a provider's conditions see of its response. */
export function metricResult(provider: HttpProvider, response: MetricResponse): Record<string, unknown> {
  const result: Record<string, unknown> = { ...response };
  switch (provider.type) {
    case 'prometheus': {
      const data = at(response.json, 'data');
      const type = at(data, 'resultType');
      const first = type === 'scalar' ? data : at(data, 'result', 0);
      const points = Array.isArray(at(first, 'values')) ? (at(first, 'values') as unknown[]) : [];
      result.values = points.map((point) => numberOf(at(point, 1)));
      result.value =
        type === 'scalar'
          ? numberOf(at(data, 'result', 1))
          : points.length > 0
            ? numberOf(at(points[points.length - 1], 1))
            : numberOf(at(first, 'value', 1));
      return result;
    }
    case 'datadog': {
      const columns = at(response.json, 'data', 'attributes', 'columns');
      const list = Array.isArray(columns) ? (columns as unknown[]) : [];
      result.values = Object.fromEntries(
        list.map((column) => [String(at(column, 'name')), numberOf(at(column, 'values', 0))]),
      );
      const firstNumber = list.find((column) => at(column, 'type') === 'number');
      result.value = firstNumber ? numberOf(at(firstNumber, 'values', 0)) : null;
      return result;
    }
    case 'terraformCloudRun':
      result.status = at(response.json, 'data', 'attributes', 'status') ?? null;
      return result;
    default:
      return result;
  }
}
