import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, isAlive, readPid } from '../../cli/embedded/processes';
import { harnessValue } from '../harness';
import { eventually } from '../helpers/eventually';

/**
 * `flightdeck start` as a user runs it: embedded PostgreSQL and Temporal, default workspace and key,
 * Ctrl-C leaving no process behind, data kept across restarts, and a restart after kill -9.
 */

interface Banner {
  apiUrl: string;
  uiUrl: string;
  metricsUrl: string;
  workspaceId: string;
  apiKey: string;
}

const ROOT = path.resolve(__dirname, '..', '..');

describe('flightdeck start (embedded stack)', () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-start-'));
    // The embedded PostgreSQL runs as the postgres user, which must be able to enter the directory.
    fs.chmodSync(dataDir, 0o755);
    env = {
      ...process.env,
      FLIGHTDECK_DATA_DIR: dataDir,
      FLIGHTDECK_PORT: String(await freePort()),
      FLIGHTDECK_EMBEDDED_PG_PORT: String(await freePort()),
      FLIGHTDECK_EMBEDDED_TEMPORAL_PORT: String(await freePort()),
      FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT: String(await freePort()),
      FLIGHTDECK_METRICS_PORT: String(await freePort()),
      TEMPORAL_CLI_PATH: harnessValue('temporalCli'),
      DATABASE_URL: '',
      TEMPORAL_ADDRESS: '',
      LOG_LEVEL: 'warn',
    };
  });

  afterEach(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
  });

  afterAll(async () => {
    await eventually(() => processesUsing(dataDir).length === 0, {
      what: 'no process left in the data directory',
    });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function start(): Promise<Banner> {
    child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'cli', 'main.ts'), 'start'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const running = child;
    return eventually(
      () => {
        if (running.exitCode !== null) throw new Error(`start exited with ${running.exitCode}`);
        const field = (label: string) => new RegExp(`${label}:\\s+(\\S+)`).exec(output)?.[1];
        if (!output.includes('Press Ctrl-C to stop.')) return undefined;
        return {
          apiUrl: field('API')!.replace(/\/v1$/, ''),
          uiUrl: field('Temporal UI')!,
          metricsUrl: field('Metrics')!,
          workspaceId: field('Workspace id')!,
          apiKey: field('API key')!,
        };
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'the start banner' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- flightdeck start output ---\n${output.slice(-4000)}`);
    });
  }

  async function cli(...args: string[]): Promise<string> {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'cli', 'main.ts'), ...args],
      { cwd: ROOT, env },
    );
    return stdout;
  }

  function exited(process: ChildProcess): Promise<number | null> {
    return new Promise((resolve) => {
      if (process.exitCode !== null) resolve(process.exitCode);
      else process.once('exit', (code) => resolve(code));
    });
  }

  function serverPids(): number[] {
    const temporal = readPid(path.join(dataDir, 'temporal.pid'));
    const postgres = readPid(path.join(dataDir, 'postgres', 'postmaster.pid'));
    return [temporal, postgres].filter((pid): pid is number => pid !== undefined);
  }

  it('serves the workspace with the printed key, and Ctrl-C stops every process', async () => {
    const banner = await start();
    expect(banner.workspaceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(banner.apiKey).toMatch(/^fdk_/);

    for (const prefix of ['/v1', '/api/v1']) {
      const res = await fetch(`${banner.apiUrl}${prefix}/workspaces/${banner.workspaceId}`, {
        headers: { 'x-api-key': banner.apiKey },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: banner.workspaceId, slug: 'default' });
    }
    const wrong = await fetch(`${banner.apiUrl}/v1/workspaces/${banner.workspaceId}`, {
      headers: { 'x-api-key': 'fdk_wrong' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('content-type')).toMatch(/application\/problem\+json/);
    // /metrics: on its own loopback listener, as printed; not on the API's port without a token.
    expect(banner.metricsUrl).toBe(`http://127.0.0.1:${env.FLIGHTDECK_METRICS_PORT}/metrics`);
    const metrics = await fetch(banner.metricsUrl);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('flightdeck_jobs');
    expect((await fetch(`${banner.apiUrl}/metrics`)).status).toBe(404);
    const ui = await fetch(banner.uiUrl);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toMatch(/<html/i);

    // The admin commands find the running stack's database through the data directory.
    expect(await cli('migrate')).toContain('Database is up to date.');
    const created = await cli('workspace', 'create', '--name', 'Payments team');
    const workspaceId = /id:\s+(\S+)/.exec(created)?.[1];
    expect(created).toContain('slug: payments-team');
    const issued = await cli('apikey', 'create', '--workspace', workspaceId!, '--name', 'ci');
    const key = /^(fdk_\S+)$/m.exec(issued)?.[1];
    const own = await fetch(`${banner.apiUrl}/v1/workspaces/${workspaceId}`, {
      headers: { 'x-api-key': key! },
    });
    expect(own.status).toBe(200);
    const others = await fetch(`${banner.apiUrl}/v1/workspaces/${banner.workspaceId}`, {
      headers: { 'x-api-key': key! },
    });
    expect(others.status).toBe(404);

    const pids = serverPids();
    expect(pids).toHaveLength(2);
    child!.kill('SIGINT');
    expect(await exited(child!)).toBe(0);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(processesUsing(dataDir)).toEqual([]);
  });

  it('reuses the data on a second start, and recovers from kill -9', async () => {
    const first = await start();
    const pids = serverPids();
    child!.kill('SIGKILL');
    await exited(child!);
    // The guardian stops the orphaned servers once its parent is gone.
    await eventually(() => pids.every((pid) => !isAlive(pid)), { what: 'orphans to be stopped' });

    const second = await start();
    expect(second.workspaceId).toBe(first.workspaceId);
    expect(second.apiKey).toBe(first.apiKey);
    const res = await fetch(`${second.apiUrl}/v1/workspaces/${second.workspaceId}`, {
      headers: { authorization: `Bearer ${second.apiKey}` },
    });
    expect(res.status).toBe(200);
    child!.kill('SIGINT');
    expect(await exited(child!)).toBe(0);
  });
});

/** Processes whose command line mentions the directory (the servers started for it). */
function processesUsing(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(dir)) found.push(`${entry}: ${cmdline}`);
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}
