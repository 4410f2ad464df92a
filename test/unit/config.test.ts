import path from 'node:path';
import { ConfigError, loadConfig } from '../../cli/config';

describe('loadConfig', () => {
  it('applies the embedded defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.api).toMatchObject({ host: '127.0.0.1', port: 8080, bodyLimit: '1mb' });
    expect(config.database.url).toBeUndefined();
    expect(config.temporal).toMatchObject({
      address: undefined,
      namespace: 'default',
      taskQueue: 'flightdeck',
    });
    expect(config.dataDir).toBe(path.resolve('.flightdeck'));
  });

  it('treats blank variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '  ', TEMPORAL_ADDRESS: '' }).database.url).toBeUndefined();
  });

  it('names every invalid variable in one message', () => {
    let error: unknown;
    try {
      loadConfig({ FLIGHTDECK_PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('FLIGHTDECK_PORT');
    expect(message).toContain('DATABASE_URL: must be a postgres:// URL');
    expect(message).toContain('LOG_LEVEL');
  });

  it("gives webhooks an egress allow-list of their own, never the agents'", () => {
    const config = loadConfig({
      FLIGHTDECK_EGRESS_ALLOW: '10.0.0.0/8',
      FLIGHTDECK_EGRESS_DENY: '10.1.0.0/16',
    });
    expect(config.egress).toEqual({ allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] });
    expect(config.webhooks.egress).toEqual({ allow: [], deny: ['10.1.0.0/16'] });
    const opened = loadConfig({ FLIGHTDECK_WEBHOOK_EGRESS_ALLOW: '192.168.5.0/24' });
    expect(opened.webhooks.egress.allow).toEqual(['192.168.5.0/24']);
    expect(opened.egress.allow).toEqual([]);
    expect(() => loadConfig({ FLIGHTDECK_WEBHOOK_EGRESS_ALLOW: 'not a cidr/99' })).toThrow(
      /FLIGHTDECK_WEBHOOK_EGRESS_ALLOW/,
    );
    expect(() => loadConfig({ FLIGHTDECK_WEBHOOK_DELIVERIES_PER_MINUTE: '0' })).toThrow(
      /FLIGHTDECK_WEBHOOK_DELIVERIES_PER_MINUTE/,
    );
  });

  it('refuses a short admin token', () => {
    expect(() => loadConfig({ FLIGHTDECK_ADMIN_TOKEN: 'short' })).toThrow(/FLIGHTDECK_ADMIN_TOKEN/);
  });

  it('serves /metrics on its own loopback port by default, without tenant labels', () => {
    expect(loadConfig({}).api.metrics).toEqual({
      token: undefined,
      listener: { host: '127.0.0.1', port: 9464 },
      tenantLabels: false,
    });
    expect(loadConfig({ FLIGHTDECK_METRICS_TOKEN: ' ', FLIGHTDECK_METRICS_PORT: '' }).api.metrics).toEqual({
      token: undefined,
      listener: { host: '127.0.0.1', port: 9464 },
      tenantLabels: false,
    });
    expect(
      loadConfig({
        FLIGHTDECK_METRICS_TOKEN: 'scrape-token-0123456789',
        FLIGHTDECK_METRICS_HOST: '0.0.0.0',
        FLIGHTDECK_METRICS_PORT: '9100',
        FLIGHTDECK_METRICS_TENANT_LABELS: 'true',
      }).api.metrics,
    ).toEqual({
      token: 'scrape-token-0123456789',
      listener: { host: '0.0.0.0', port: 9100 },
      tenantLabels: true,
    });
    expect(loadConfig({ FLIGHTDECK_METRICS_PORT: 'off' }).api.metrics.listener).toBeUndefined();
  });

  it("runs a worker's metrics listener only when FLIGHTDECK_METRICS_PORT is set to a port", () => {
    expect(loadConfig({}).worker.metricsListener).toBeUndefined();
    expect(loadConfig({ FLIGHTDECK_METRICS_PORT: 'off' }).worker.metricsListener).toBeUndefined();
    expect(
      loadConfig({ FLIGHTDECK_METRICS_HOST: '0.0.0.0', FLIGHTDECK_METRICS_PORT: '9100' }).worker
        .metricsListener,
    ).toEqual({ host: '0.0.0.0', port: 9100 });
    expect(loadConfig({}).api.metrics.workerUrl).toBeUndefined();
    expect(
      loadConfig({ FLIGHTDECK_WORKER_METRICS_URL: 'http://127.0.0.1:40123' }).api.metrics.workerUrl,
    ).toBe('http://127.0.0.1:40123');
    expect(() => loadConfig({ FLIGHTDECK_WORKER_METRICS_URL: '127.0.0.1:40123' })).toThrow(
      /FLIGHTDECK_WORKER_METRICS_URL: must be an http:\/\/ URL/,
    );
  });

  it('refuses a short metrics token and a metrics port that is not a free second port', () => {
    expect(() => loadConfig({ FLIGHTDECK_METRICS_TOKEN: 'short' })).toThrow(
      /FLIGHTDECK_METRICS_TOKEN: must be at least 16 characters/,
    );
    expect(() => loadConfig({ FLIGHTDECK_METRICS_PORT: 'ninety' })).toThrow(
      /FLIGHTDECK_METRICS_PORT: must be a port \(1-65535\) or off/,
    );
    expect(() => loadConfig({ FLIGHTDECK_METRICS_TENANT_LABELS: 'maybe' })).toThrow(
      /FLIGHTDECK_METRICS_TENANT_LABELS/,
    );
    expect(() => loadConfig({ FLIGHTDECK_METRICS_PORT: '70000' })).toThrow(/FLIGHTDECK_METRICS_PORT/);
    expect(() => loadConfig({ FLIGHTDECK_PORT: '9464' })).toThrow(
      /FLIGHTDECK_METRICS_PORT: must differ from FLIGHTDECK_PORT/,
    );
    expect(() => loadConfig({ FLIGHTDECK_METRICS_PORT: '8080' })).toThrow(
      /FLIGHTDECK_METRICS_PORT: must differ from FLIGHTDECK_PORT/,
    );
    expect(() => loadConfig({ FLIGHTDECK_PORT: '9000', FLIGHTDECK_METRICS_PORT: '9000' })).toThrow(
      /must differ from FLIGHTDECK_PORT/,
    );
  });
});
