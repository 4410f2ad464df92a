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

  it('refuses a short admin token', () => {
    expect(() => loadConfig({ FLIGHTDECK_ADMIN_TOKEN: 'short' })).toThrow(/FLIGHTDECK_ADMIN_TOKEN/);
  });
});
