import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureTemporalCli, findTemporalCli, TemporalCliError } from '../../cli/temporalCli';

describe('finding the Temporal CLI', () => {
  let dir: string;
  const executable = (file: string) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '#!/bin/sh\necho temporal\n', { mode: 0o755 });
    return file;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fd-cli-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('prefers TEMPORAL_CLI_PATH, then PATH, then the cache', () => {
    const fromEnv = executable(path.join(dir, 'env', 'temporal'));
    const onPath = executable(path.join(dir, 'bin', 'temporal'));
    const cached = executable(path.join(dir, 'cache', 'flightdeck', 'temporal-v1.5.1', 'temporal'));
    const env = { XDG_CACHE_HOME: path.join(dir, 'cache'), PATH: path.join(dir, 'bin') };
    expect(findTemporalCli({ ...env, TEMPORAL_CLI_PATH: fromEnv })).toEqual({ path: fromEnv, source: 'env' });
    expect(findTemporalCli(env)).toEqual({ path: onPath, source: 'path' });
    expect(findTemporalCli({ ...env, PATH: '' })).toEqual({ path: cached, source: 'cache' });
  });

  it('prefers the newer cached build', () => {
    const newer = executable(path.join(dir, 'flightdeck', 'temporal-v1.8.1', 'temporal'));
    executable(path.join(dir, 'flightdeck', 'temporal-v1.5.1', 'temporal'));
    expect(findTemporalCli({ XDG_CACHE_HOME: dir, PATH: '' })?.path).toBe(newer);
  });

  it('rejects a TEMPORAL_CLI_PATH that is not executable', () => {
    expect(() => findTemporalCli({ TEMPORAL_CLI_PATH: path.join(dir, 'missing') })).toThrow(TemporalCliError);
  });

  it('explains what to do when neither the CLI nor Go is available', async () => {
    await expect(ensureTemporalCli(() => undefined, { XDG_CACHE_HOME: dir, PATH: '' })).rejects.toThrow(
      /Go is not installed.*TEMPORAL_CLI_PATH.*TEMPORAL_ADDRESS/s,
    );
  });
});
