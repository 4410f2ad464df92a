import fs from 'node:fs';
import path from 'node:path';
import { SecretBox } from '../db/secrets';
import type { Config } from './config';
import { isAlive, readPid } from './embedded/processes';

/**
 * Files `flightdeck start` keeps in its data directory: who is running, where the running stack
 * can be reached (so `flightdeck workspace create` works without DATABASE_URL), and the default
 * workspace's API key (the database stores only its hash).
 */

export interface RuntimeState {
  pid: number;
  apiUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  temporalUiUrl?: string;
  /** The processes `flightdeck start` runs: the API, the worker, and the Temporal dev server it started. */
  processes: { api: number; worker: number; temporal?: number };
}

export interface Credentials {
  workspaceId: string;
  apiKey: string;
}

const files = (dataDir: string) => ({
  lock: path.join(dataDir, 'flightdeck.pid'),
  runtime: path.join(dataDir, 'runtime.json'),
  credentials: path.join(dataDir, 'credentials.json'),
});

export function credentialsFile(dataDir: string): string {
  return files(dataDir).credentials;
}

/** Refuses a second `flightdeck start` on the same data directory while the first one lives. */
export function acquireStartLock(dataDir: string): () => void {
  const { lock } = files(dataDir);
  const holder = readPid(lock);
  if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
    throw new Error(`Flightdeck is already running from ${dataDir} (pid ${holder}). Stop it first.`);
  }
  fs.writeFileSync(lock, String(process.pid));
  return () => {
    if (readPid(lock) === process.pid) fs.rmSync(lock, { force: true });
  };
}

function writePrivateJson(file: string, value: unknown): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temp, file);
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

export function writeRuntimeState(dataDir: string, state: RuntimeState): void {
  writePrivateJson(files(dataDir).runtime, state);
}

export function clearRuntimeState(dataDir: string): void {
  fs.rmSync(files(dataDir).runtime, { force: true });
}

/** The running stack's addresses, if a live `flightdeck start` wrote them. */
export function readRuntimeState(dataDir: string): RuntimeState | undefined {
  const state = readJson<RuntimeState>(files(dataDir).runtime);
  return state && isAlive(state.pid) ? state : undefined;
}

export function writeCredentials(dataDir: string, credentials: Credentials): void {
  writePrivateJson(files(dataDir).credentials, credentials);
}

export function readCredentials(dataDir: string): Credentials | undefined {
  return readJson<Credentials>(files(dataDir).credentials);
}

/**
 * The key that encrypts sensitive values: FLIGHTDECK_SECRET_KEY, else (for `flightdeck start`
 * only) one generated on first start and kept in the data directory, mode 0600. Admin commands
 * (`existing`) use that file when it is there, as they use the database `start` recorded.
 */
export function secretKeyFor(config: Config, options: { generate: boolean; existing?: boolean }): string {
  if (config.secretKey) return config.secretKey;
  const generated = path.join(config.dataDir, 'secret-key');
  if (options.existing && fs.existsSync(generated)) return fs.readFileSync(generated, 'utf8').trim();
  if (!options.generate) {
    throw new Error(
      'FLIGHTDECK_SECRET_KEY must be set (32 bytes, e.g. `openssl rand -base64 32`); it encrypts secrets at rest.',
    );
  }
  if (!fs.existsSync(generated))
    fs.writeFileSync(generated, `${SecretBox.generateKey()}\n`, { mode: 0o600, flag: 'wx' });
  return fs.readFileSync(generated, 'utf8').trim();
}

export function secretBoxFor(config: Config, options: { generate: boolean; existing?: boolean }): SecretBox {
  return SecretBox.fromString(secretKeyFor(config, options));
}
