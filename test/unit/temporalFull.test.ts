import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findTemporalServer, postgresFromUrl, TEMPORAL_SERVER_VERSION } from '../../cli/temporalFull';

describe('the full Temporal server (cli/temporalFull.ts)', () => {
  it('reads the PostgreSQL endpoint and both database names from one URL', () => {
    expect(postgresFromUrl('postgres://temporal:s%40cret@db.internal:6432/fd_temporal')).toEqual({
      postgres: { host: 'db.internal', port: 6432, user: 'temporal', password: 's@cret' },
      databases: { temporal: 'fd_temporal', visibility: 'fd_temporal_visibility' },
    });
    expect(postgresFromUrl('postgresql://127.0.0.1')).toEqual({
      postgres: { host: '127.0.0.1', port: 5432, user: 'postgres', password: undefined },
      databases: { temporal: 'temporal', visibility: 'temporal_visibility' },
    });
    expect(() => postgresFromUrl('mysql://localhost/temporal')).toThrow(
      'expected a postgres:// URL, not mysql:',
    );
  });

  it('finds a cached build only when both binaries and the schema are there', () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'fd-server-cache-'));
    try {
      const dir = path.join(cache, 'flightdeck', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
      const env = { XDG_CACHE_HOME: cache };
      fs.mkdirSync(path.join(dir, 'schema', 'postgresql', 'v12', 'temporal', 'versioned'), {
        recursive: true,
      });
      fs.writeFileSync(path.join(dir, 'temporal-server'), '', { mode: 0o755 });
      expect(findTemporalServer(env)).toBeUndefined();
      fs.writeFileSync(path.join(dir, 'temporal-sql-tool'), '', { mode: 0o755 });
      expect(findTemporalServer(env)).toEqual({
        version: TEMPORAL_SERVER_VERSION,
        serverPath: path.join(dir, 'temporal-server'),
        sqlToolPath: path.join(dir, 'temporal-sql-tool'),
        schemaDir: path.join(dir, 'schema', 'postgresql', 'v12'),
        source: 'cache',
      });
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
