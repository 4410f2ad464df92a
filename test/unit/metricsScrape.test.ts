import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { metricsListenerApp } from '../../api/metricsListener';
import { gatherMetrics, processMetrics, scrapeMetrics, type MetricsSources } from '../../api/metricsScrape';
import { metricsRouter } from '../../api/routes/metrics';
import { listen, type ApiServer } from '../../api/server';
import { sharedRead } from '../../engine/metrics';

/**
 * What /metrics shows without tenant labels, and what a burst of scrapes costs
 * (docs/security.md "Metrics exposure").
 */
describe('/metrics without tenant labels', () => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'test_' });
  const claims = new Counter({
    name: 'test_claims_total',
    help: 'claims',
    labelNames: ['workspace', 'agent'],
    registers: [registry],
  });
  const oldest = new Gauge({
    name: 'test_oldest_seconds',
    help: 'oldest',
    labelNames: ['workspace', 'agent'],
    aggregator: 'max',
    registers: [registry],
  });
  const jobs = new Gauge({
    name: 'test_jobs',
    help: 'jobs',
    labelNames: ['status', 'workspace', 'agent'],
    registers: [registry],
  });
  claims.inc({ workspace: 'ws-a', agent: 'runner' }, 2);
  claims.inc({ workspace: 'ws-b', agent: 'runner' }, 3);
  oldest.set({ workspace: 'ws-a', agent: 'runner' }, 40);
  oldest.set({ workspace: 'ws-b', agent: 'other' }, 75);
  jobs.set({ status: 'queued', workspace: 'ws-a', agent: 'runner' }, 1);
  jobs.set({ status: 'queued', workspace: 'ws-b', agent: 'other' }, 4);
  jobs.set({ status: 'in_progress', workspace: 'ws-b', agent: 'other' }, 6);

  const scrape = (tenantLabels: boolean) =>
    scrapeMetrics({
      metrics: [() => registry.getMetricsAsJSON()],
      texts: [async () => 'temporal_worker_task_slots_available 3\n'],
      tenantLabels,
    });

  it('sums counts and takes the largest age over the workspaces and agents, naming none of them', async () => {
    const { text } = await scrape(false);
    expect(text).not.toMatch(/workspace=|agent=|ws-a|ws-b|runner/);
    expect(text).toMatch(/^test_claims_total 5$/m);
    expect(text).toMatch(/^test_oldest_seconds 75$/m);
    expect(text).toMatch(/^test_jobs\{status="queued"\} 5$/m);
    expect(text).toMatch(/^test_jobs\{status="in_progress"\} 6$/m);
  });

  it('leaves every other metric as it is, and appends the text sources', async () => {
    const { text, contentType } = await scrape(false);
    expect(contentType).toMatch(/^text\/plain/);
    for (const name of [
      'test_process_start_time_seconds',
      'test_process_cpu_seconds_total',
      'test_nodejs_version_info',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}(\\{[^}]*\\})? `, 'm'));
    }
    expect(text).toMatch(/^temporal_worker_task_slots_available 3$/m);
  });

  it('shows the tenant labels when configured', async () => {
    const { text } = await scrape(true);
    expect(text).toMatch(/^test_claims_total\{workspace="ws-a",agent="runner"\} 2$/m);
    expect(text).toMatch(/^test_oldest_seconds\{workspace="ws-b",agent="other"\} 75$/m);
  });
});

/**
 * `flightdeck start` runs the API and the worker as processes of their own; the worker's figures reach the
 * API's /metrics through the worker's metrics listener (docs/metrics.md).
 */
describe('a scrape', () => {
  it('shows the figures of one moment: an event counted while a slower source is read is not half in it', async () => {
    const registry = new Registry();
    const expiries = new Counter({ name: 'test_expiries_total', help: 'expiries', registers: [registry] });
    const lag = new Histogram({ name: 'test_lag_seconds', help: 'lag', buckets: [1], registers: [registry] });
    const expire = () => {
      lag.observe(0.5);
      expiries.inc();
    };
    const { text } = await scrapeMetrics({
      metrics: [
        () => registry.getMetricsAsJSON(),
        // A source that waits on I/O, as the database-backed gauges do; an expiry lands meanwhile.
        () => new Promise((resolve) => setTimeout(() => (expire(), resolve([])), 10)),
      ],
      texts: [],
      tenantLabels: false,
    });
    expect(text).toMatch(/^test_expiries_total 0$/m);
    expect(text).toMatch(/^test_lag_seconds_count 0$/m);
    await expect(expiries.get()).resolves.toMatchObject({ values: [{ value: 1 }] });
  });
});

describe("another process's figures on /metrics", () => {
  const TOKEN = 'scrape-token-for-tests-0123456789';
  /** The same domain counter in each process, and metrics only one of them has. */
  const processRegistry = (prefix: string, expiries: number, lagSeconds: number[]) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix });
    const expired = new Counter({
      name: 'test_lease_expiries_total',
      help: 'expiries',
      registers: [registry],
    });
    expired.inc(expiries);
    const lag = new Histogram({
      name: 'test_reaper_lag_seconds',
      help: 'lag',
      buckets: [1, 10],
      registers: [registry],
    });
    for (const seconds of lagSeconds) lag.observe(seconds);
    const claims = new Counter({
      name: 'test_claims_total',
      help: 'claims',
      labelNames: ['workspace', 'agent'],
      registers: [registry],
    });
    return { registry, claims };
  };
  const api = processRegistry('test_api_', 0, []);
  const worker = processRegistry('test_worker_', 3, [0.5, 5]);
  api.claims.inc({ workspace: 'ws-a', agent: 'runner' }, 4);
  worker.claims.inc({ workspace: 'ws-b', agent: 'runner' }, 1);
  const workerSources: MetricsSources = {
    metrics: [() => worker.registry.getMetricsAsJSON()],
    texts: [async () => 'temporal_worker_task_slots_available 7\n'],
    tenantLabels: false,
  };

  let listener: ApiServer;
  beforeAll(async () => {
    const router = metricsRouter(
      () => scrapeMetrics(workerSources),
      [TOKEN],
      () => gatherMetrics(workerSources),
    );
    listener = await listen(metricsListenerApp(pino({ level: 'silent' }), router), '127.0.0.1', 0);
  });
  afterAll(() => listener.close());

  const scrape = (processes: MetricsSources['processes'], tenantLabels = false) =>
    scrapeMetrics({ metrics: [() => api.registry.getMetricsAsJSON()], texts: [], processes, tenantLabels });

  it('shows each metric once: what both processes count is combined, what one has stays as it is', async () => {
    const { text } = await scrape([() => processMetrics(listener.url, TOKEN)]);
    expect(text).toMatch(/^test_lease_expiries_total 3$/m);
    expect(text).toMatch(/^test_reaper_lag_seconds_bucket\{le="1"\} 1$/m);
    expect(text).toMatch(/^test_reaper_lag_seconds_count 2$/m);
    expect(text).toMatch(/^test_claims_total 5$/m);
    expect(text).toMatch(/^test_api_process_cpu_seconds_total /m);
    expect(text).toMatch(/^test_worker_process_cpu_seconds_total /m);
    expect(text).toMatch(/^temporal_worker_task_slots_available 7$/m);
    const families = [...text.matchAll(/^# TYPE (\S+)/gm)].map((match) => match[1]);
    expect(families.filter((name, n) => families.indexOf(name) !== n)).toEqual([]);
  });

  it("keeps the other process's tenant labels when configured", async () => {
    const { text } = await scrape([() => processMetrics(listener.url, TOKEN)], true);
    expect(text).toMatch(/^test_claims_total\{workspace="ws-a",agent="runner"\} 4$/m);
    expect(text).toMatch(/^test_claims_total\{workspace="ws-b",agent="runner"\} 1$/m);
  });

  it('serves the listener to the token only, as Prometheus text and as figures', async () => {
    expect((await fetch(`${listener.url}/metrics.json`)).status).toBe(401);
    const denied = await scrape([() => processMetrics(listener.url)]);
    expect(denied.text).toContain(`# ${listener.url}/metrics.json unavailable: 401`);
    const text = await (
      await fetch(`${listener.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toMatch(/^test_lease_expiries_total 3$/m);
    expect(text).toMatch(/^temporal_worker_task_slots_available 7$/m);
  });

  it('answers without the figures of a process that is down or does not answer, saying so', async () => {
    const closed = await listen(
      metricsListenerApp(
        pino({ level: 'silent' }),
        metricsRouter(() => scrape([]), []),
      ),
      '127.0.0.1',
      0,
    );
    await closed.close();
    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const { text } = await scrape([() => processMetrics(closed.url), () => processMetrics(silentUrl)]);
      expect(text).toContain(`# ${closed.url}/metrics.json unavailable`);
      expect(text).toContain(`# ${silentUrl}/metrics.json unavailable`);
      expect(text).toMatch(/^test_lease_expiries_total 0$/m);
      expect(text).toMatch(/^test_api_process_cpu_seconds_total /m);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('sharedRead', () => {
  it('reads once per interval and for concurrent calls, and keeps no failure', async () => {
    let clock = 1_000;
    let reads = 0;
    let fail = false;
    const read = sharedRead(
      5_000,
      async () => {
        reads++;
        if (fail) throw new Error('database gone');
        return reads;
      },
      () => clock,
    );
    expect(await Promise.all([read(), read(), read()])).toEqual([1, 1, 1]);
    clock += 4_999;
    expect(await read()).toBe(1);
    clock += 1;
    expect(await read()).toBe(2);
    expect(reads).toBe(2);

    clock += 5_000;
    fail = true;
    await expect(read()).rejects.toThrow('database gone');
    fail = false;
    expect(await read()).toBe(4);
  });

  it('with no interval, still shares a read under way', async () => {
    let reads = 0;
    let finish: () => void = () => undefined;
    const read = sharedRead(0, () => {
      reads++;
      return new Promise<number>((resolve) => (finish = () => resolve(reads)));
    });
    const together = Promise.all([read(), read()]);
    finish();
    expect(await together).toEqual([1, 1]);
    const next = read();
    finish();
    expect(await next).toBe(2);
  });
});
