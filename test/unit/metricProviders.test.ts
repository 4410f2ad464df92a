import {
  metricRequest,
  metricResult,
  oauth2TokenRequest,
  promDurationMs,
} from '../../domain/metricProviders';
import { VerificationMetric } from '../../domain/policies';

const now = new Date('2026-11-25T12:00:00Z');
const provider = (value: object) =>
  VerificationMetric.parse({
    name: 'm',
    intervalSeconds: 1,
    count: 1,
    successCondition: 'true',
    provider: value,
  }).provider as Exclude<ReturnType<typeof VerificationMetric.parse>['provider'], { type: 'sleep' }>;

const response = (json: unknown) => ({
  ok: true,
  statusCode: 200,
  body: JSON.stringify(json),
  json,
  durationMs: 5,
});

describe('metric providers', () => {
  it('prometheus: an instant query with a bearer token, or a range query over the last start', () => {
    const instant = metricRequest(
      provider({
        type: 'prometheus',
        address: 'https://prom/',
        query: 'up',
        authentication: { bearerToken: 't' },
      }),
      now,
    );
    expect(instant.url).toBe(`https://prom/api/v1/query?query=up&time=${now.getTime() / 1000}`);
    expect(instant.headers).toEqual({ Authorization: 'Bearer t' });
    const range = metricRequest(
      provider({
        type: 'prometheus',
        address: 'https://prom',
        query: 'up',
        rangeQuery: { step: '1m' },
        timeout: 5,
      }),
      now,
    );
    const params = new URL(range.url).searchParams;
    expect(new URL(range.url).pathname).toBe('/api/v1/query_range');
    expect(Number(params.get('end')) - Number(params.get('start'))).toBe(600);
    expect(range.timeoutMs).toBe(5000);
    expect(promDurationMs('1h')).toBe(3_600_000);
  });

  it('prometheus: reads the value of a vector, a scalar, and a range', () => {
    const p = provider({ type: 'prometheus', address: 'https://prom', query: 'up' });
    expect(
      metricResult(p, response({ data: { resultType: 'vector', result: [{ value: [1, '0.5'] }] } })).value,
    ).toBe(0.5);
    expect(metricResult(p, response({ data: { resultType: 'scalar', result: [1, '3'] } })).value).toBe(3);
    const range = metricResult(
      p,
      response({
        data: {
          resultType: 'matrix',
          result: [
            {
              values: [
                [1, '1'],
                [2, '2'],
              ],
            },
          ],
        },
      }),
    );
    expect(range).toMatchObject({ value: 2, values: [1, 2] });
    expect(metricResult(p, response({ data: { resultType: 'vector', result: [] } })).value).toBeNull();
  });

  it('prometheus: the OAuth2 client-credentials request', () => {
    const request = oauth2TokenRequest(
      provider({
        type: 'prometheus',
        address: 'https://prom',
        query: 'up',
        authentication: {
          oauth2: { tokenUrl: 'https://idp/token', clientId: 'c', clientSecret: 's', scopes: ['a', 'b'] },
        },
      }),
    )!;
    expect(request).toMatchObject({ url: 'https://idp/token', method: 'POST' });
    expect(Object.fromEntries(new URLSearchParams(request.body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'c',
      client_secret: 's',
      scope: 'a b',
    });
  });

  it('datadog: a scalar query on the site with both keys, read by column', () => {
    const p = provider({
      type: 'datadog',
      apiKey: 'k',
      appKey: 'a',
      queries: { errors: 'sum:e{*}', total: 'sum:t{*}' },
      formula: 'errors / total',
    });
    const request = metricRequest(p, now);
    expect(request.url).toBe('https://api.datadoghq.com/api/v2/query/scalar');
    expect(request.headers).toMatchObject({ 'DD-API-KEY': 'k', 'DD-APPLICATION-KEY': 'a' });
    const body = JSON.parse(request.body!);
    expect(body.data.attributes).toMatchObject({
      to: now.getTime(),
      from: now.getTime() - 300_000,
      formulas: [{ formula: 'errors / total' }],
      queries: [
        { data_source: 'metrics', name: 'errors', query: 'sum:e{*}', aggregator: 'last' },
        { data_source: 'metrics', name: 'total', query: 'sum:t{*}', aggregator: 'last' },
      ],
    });
    const result = metricResult(
      p,
      response({
        data: { attributes: { columns: [{ name: 'errors / total', type: 'number', values: [0.25] }] } },
      }),
    );
    expect(result).toMatchObject({ value: 0.25, values: { 'errors / total': 0.25 } });
  });

  it('terraformCloudRun: the run read by id, its status in the result', () => {
    const p = provider({
      type: 'terraformCloudRun',
      address: 'https://app.terraform.io',
      token: 't',
      runId: 'run-x1',
    });
    expect(metricRequest(p, now)).toMatchObject({
      url: 'https://app.terraform.io/api/v2/runs/run-x1',
      headers: { Authorization: 'Bearer t' },
    });
    expect(metricResult(p, response({ data: { attributes: { status: 'errored' } } })).status).toBe('errored');
  });
});
