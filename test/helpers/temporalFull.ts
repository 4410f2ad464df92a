import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  postgresFromUrl,
  startFullTemporalServer,
  type FullTemporalServer,
  type FullTemporalServerOptions,
} from '../../cli/temporalFull';
import { harnessValue } from '../harness';
import { dropDatabase } from './database';

export interface TestTemporalServer {
  server: FullTemporalServer;
  /** Stops the server and starts it again on the same port and databases. */
  restart(): Promise<FullTemporalServer>;
  /** Stops the server, drops its two databases and removes its data directory. */
  close(): Promise<void>;
}

/**
 * A full Temporal server (TEMPORAL_FULL=1 tests) on the test PostgreSQL, with databases of its own
 * (`fd_temporal_<random>`) so runs never collide, and nothing left behind after `close`.
 */
export async function startTestTemporalServer(log: (line: string) => void): Promise<TestTemporalServer> {
  const suffix = randomBytes(4).toString('hex');
  const options: FullTemporalServerOptions = {
    postgres: postgresFromUrl(harnessValue('pgAdminUrl')).postgres,
    databases: { temporal: `fd_temporal_${suffix}`, visibility: `fd_temporal_${suffix}_visibility` },
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'fd-temporal-full-')),
    log,
  };
  const handle: TestTemporalServer = {
    server: await startFullTemporalServer(options),
    async restart() {
      const frontendPort = Number(handle.server.address.split(':').at(-1));
      await handle.server.stop();
      handle.server = await startFullTemporalServer({ ...options, frontendPort });
      return handle.server;
    },
    async close() {
      await handle.server.stop();
      for (const name of Object.values(options.databases)) await dropDatabase(name);
      fs.rmSync(options.dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}
