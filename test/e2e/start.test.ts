import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, isAlive, readPid } from '../../cli/embedded/processes';
import { DEFAULT_TEMPORAL_MEMORY_LIMIT_MB } from '../../cli/embedded/temporalMemory';
import { DEFAULT_WORKER_HEAP_MB, WORKER_SEMI_SPACE_MB } from '../../worker/tuning';
import { harnessValue } from '../harness';
import { eventually } from '../helpers/eventually';

/**
 * `flightdeck start` as a user runs it: embedded PostgreSQL and Temporal, the API in the start
 * process and the worker in one of its own (the worker and Temporal below the default CPU priority), default
 * workspace and key, Ctrl-C leaving no process behind, data kept across restarts, a restart after
 * kill -9, and everything stopped (exit 1) when the worker dies.
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
  let output = '';

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
      // The memory settings under test are the defaults.
      FLIGHTDECK_WORKER_HEAP_MB: undefined,
      FLIGHTDECK_EMBEDDED_TEMPORAL_MEMORY_MB: undefined,
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
    output = '';
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

  /** The API's (the start process) and the worker's processes, as the running start recorded them. */
  function rolePids(): { api: number; worker: number } {
    const state = JSON.parse(fs.readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as {
      processes: { api: number; worker: number };
    };
    return state.processes;
  }

  /** Every process of the stack: PostgreSQL, Temporal, the API and the worker. */
  function stackPids(): number[] {
    const { api, worker } = rolePids();
    return [...serverPids(), api, worker];
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

    const pids = stackPids();
    expect(pids).toHaveLength(4);
    child!.kill('SIGINT');
    expect(await exited(child!)).toBe(0);
    for (const pid of pids) expect({ pid, alive: isAlive(pid) }).toEqual({ pid, alive: false });
    expect(processesUsing(dataDir)).toEqual([]);
  });

  it('runs the API in the start process and the worker in its own, the worker and Temporal at a lower priority, both on /metrics', async () => {
    const banner = await start();
    const { api, worker } = rolePids();
    const [temporal, postgres] = serverPids();
    expect(api).toBe(child!.pid);
    expect(worker).not.toBe(api);
    expect(commandLine(worker)).toMatch(/ worker$/);
    // Every thread: a priority lowered after start would have left the threads started before it.
    expect({ worker: niceness(worker), temporal: niceness(temporal!) }).toEqual({
      worker: [10],
      temporal: [10],
    });
    expect({ api: niceness(api), postgres: niceness(postgres!) }).toEqual({ api: [0], postgres: [0] });
    // The worker and Temporal each lead a session of their own; where the kernel shares the CPU between
    // sessions first (autogroups), the background sessions are niced as well, and the API's is not.
    if (fs.existsSync(`/proc/${api}/autogroup`)) {
      expect({
        api: autogroupNiceness(api),
        worker: autogroupNiceness(worker),
        temporal: autogroupNiceness(temporal!),
      }).toEqual({ api: 0, worker: 10, temporal: 10 });
    }
    expect(environment(worker).MALLOC_ARENA_MAX).toBe('2');
    // Fixed malloc thresholds for the worker's native threads only (worker/tuning.ts `workerMallocEnv`).
    expect({
      worker: [environment(worker).MALLOC_MMAP_THRESHOLD_, environment(worker).MALLOC_TRIM_THRESHOLD_],
      api: [environment(api).MALLOC_MMAP_THRESHOLD_, environment(api).MALLOC_TRIM_THRESHOLD_],
    }).toEqual({ worker: ['131072', '131072'], api: [undefined, undefined] });
    // Memory bounds: the worker's V8 heaps, the dev server's Go heap (ARCHITECTURE.md, "Worker tuning",
    // "The embedded Temporal server").
    expect(commandLine(worker)).toContain(
      `--max-old-space-size=${DEFAULT_WORKER_HEAP_MB} --max-semi-space-size=${WORKER_SEMI_SPACE_MB} `,
    );
    expect(commandLine(api)).not.toContain('--max-old-space-size');
    expect(environment(temporal!).GOMEMLIMIT).toBe(`${DEFAULT_TEMPORAL_MEMORY_LIMIT_MB}MiB`);
    expect(environment(api).GOMEMLIMIT).toBeUndefined();

    // The worker's figures (its process, its Temporal SDK) join the API's on one /metrics, each
    // metric once: a domain counter both processes keep is combined, not repeated.
    const text = await (await fetch(banner.metricsUrl)).text();
    expect(text).toMatch(/^flightdeck_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^flightdeck_worker_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^temporal_\w+/m);
    expect(text).toMatch(/^flightdeck_lease_expiries_total 0$/m);
    const families = [...text.matchAll(/^# TYPE (\S+)/gm)].map((match) => match[1]);
    expect(families.filter((name, n) => families.indexOf(name) !== n)).toEqual([]);

    const pids = stackPids();
    child!.kill('SIGINT');
    expect(await exited(child!)).toBe(0);
    for (const pid of pids) expect({ pid, alive: isAlive(pid) }).toEqual({ pid, alive: false });
  });

  it('stops everything and exits 1 when the worker dies, restarting nothing', async () => {
    await start();
    const pids = stackPids();
    process.kill(rolePids().worker, 'SIGKILL');
    expect(await exited(child!)).toBe(1);
    expect(output).toMatch(/Stopping \(the worker exited: signal SIGKILL\)/);
    for (const pid of pids) expect({ pid, alive: isAlive(pid) }).toEqual({ pid, alive: false });
    expect(processesUsing(dataDir)).toEqual([]);
  });

  it('reuses the data on a second start, and recovers from kill -9', async () => {
    const first = await start();
    const pids = stackPids();
    expect(pids).toHaveLength(4);
    child!.kill('SIGKILL');
    await exited(child!);
    // The guardian stops the orphaned servers and worker once its parent (and the API with it) is gone.
    await eventually(() => pids.every((pid) => !isAlive(pid)), {
      what: 'orphans to be stopped',
      timeoutMs: 45_000,
    });

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

function commandLine(pid: number): string {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
}

function environment(pid: number): Record<string, string> {
  const entries = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return Object.fromEntries(
    entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

/**
 * The niceness of the autogroup a process's session has (`/autogroup-<n> nice <value>`). A session
 * that never left init's (a runner started by a container's first process) reads empty: it is in the
 * root group, at the default weight.
 */
function autogroupNiceness(pid: number): number {
  const group = fs.readFileSync(`/proc/${pid}/autogroup`, 'utf8');
  return group.trim() === '' ? 0 : Number(/nice (-?\d+)/.exec(group)?.[1]);
}

/** The distinct niceness values of a process's threads (field 19 of /proc/<pid>/task/<tid>/stat). */
function niceness(pid: number): number[] {
  const values = new Set<number>();
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    const stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    values.add(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return [...values];
}
