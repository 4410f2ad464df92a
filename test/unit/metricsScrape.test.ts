import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { scrapeMetrics } from '../../api/metricsScrape';
import { sharedRead } from '../../db/domainMetrics';

/** Issue 24 (5): what /metrics shows without tenant labels, and what a burst of scrapes costs. */
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
