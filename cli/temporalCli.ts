import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Finds the `temporal` binary (which holds the dev server and its Web UI) or builds it from Go
 * modules. No npm package ships a Temporal server, so a machine builds it once into a per-user
 * cache outside the repository; later runs find it there instantly.
 *
 * Preferred: CLI v1.8.1. Its go.mod replaces the nested module `github.com/temporalio/cli/cliext`
 * with a relative path, which `go install pkg@version` refuses, so a throw-away wrapper module
 * requires the CLI and re-points that replace at the same commit. When the module proxy cannot
 * serve `cliext` at that commit (some mirrors do not), we fall back to v1.5.1, which predates the
 * nested module and installs with a plain `go install`.
 */

interface WrappedBuild {
  kind: 'wrapper';
  version: string;
  /** Pseudo-version of `cliext` at the tag's commit: v0.0.0-<commit time UTC>-<12 hex of commit>. */
  cliextPseudoVersion: string;
  goVersion: string;
}

interface PlainBuild {
  kind: 'plain';
  version: string;
}

export const TEMPORAL_CLI_BUILDS: readonly (WrappedBuild | PlainBuild)[] = [
  {
    kind: 'wrapper',
    version: 'v1.8.1',
    cliextPseudoVersion: 'v0.0.0-20260714151737-d904a0d53bff',
    goVersion: '1.26.4',
  },
  { kind: 'plain', version: 'v1.5.1' },
];

export interface TemporalCliLocation {
  path: string;
  source: 'env' | 'path' | 'cache' | 'built';
}

export class TemporalCliError extends Error {}

type Log = (line: string) => void;

export function temporalCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'flightdeck');
}

function cachedBinary(version: string, env: NodeJS.ProcessEnv): string {
  return path.join(temporalCacheDir(env), `temporal-${version}`, 'temporal');
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findOnPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** Looks without building: TEMPORAL_CLI_PATH, then PATH, then the cache (preferred version first). */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): TemporalCliLocation | undefined {
  const fromEnv = env.TEMPORAL_CLI_PATH?.trim();
  if (fromEnv) {
    if (!isExecutable(fromEnv)) {
      throw new TemporalCliError(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    }
    return { path: fromEnv, source: 'env' };
  }
  const onPath = findOnPath('temporal', env);
  if (onPath) return { path: onPath, source: 'path' };
  for (const build of TEMPORAL_CLI_BUILDS) {
    const cached = cachedBinary(build.version, env);
    if (isExecutable(cached)) return { path: cached, source: 'cache' };
  }
  return undefined;
}

/** Finds the CLI, building it into the cache when it is nowhere to be found. */
export async function ensureTemporalCli(
  log: Log = (line) => process.stderr.write(`${line}\n`),
  env: NodeJS.ProcessEnv = process.env,
): Promise<TemporalCliLocation> {
  const found = findTemporalCli(env);
  if (found) return found;
  const go = findOnPath('go', env);
  if (!go) {
    throw new TemporalCliError(
      'The Temporal CLI was not found and Go is not installed to build it. Install Go 1.25 or newer ' +
        '(https://go.dev/dl), or set TEMPORAL_CLI_PATH to a `temporal` binary, or set TEMPORAL_ADDRESS ' +
        'to use a Temporal server you already run.',
    );
  }
  const failures: string[] = [];
  for (const build of TEMPORAL_CLI_BUILDS) {
    const started = Date.now();
    try {
      const binary = await buildTemporalCli(go, build, log, env);
      log(`Temporal CLI ${build.version} built in ${Math.round((Date.now() - started) / 1000)} s: ${binary}`);
      return { path: binary, source: 'built' };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      failures.push(`${build.version}: ${reason}`);
      log(
        `Temporal CLI ${build.version} could not be built (${reason.split('\n')[0]}); trying the next option.`,
      );
    }
  }
  throw new TemporalCliError(`Could not build the Temporal CLI from Go modules:\n${failures.join('\n')}`);
}

async function buildTemporalCli(
  go: string,
  build: WrappedBuild | PlainBuild,
  log: Log,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const target = cachedBinary(build.version, env);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Build into a private directory, then rename: concurrent builders never see half a binary.
  const work = fs.mkdtempSync(path.join(path.dirname(target), '.build-'));
  const goEnv = { ...env, CGO_ENABLED: '0', GOBIN: work, GOFLAGS: '-mod=mod' };
  try {
    if (build.kind === 'wrapper') {
      writeWrapperModule(work, build);
      // One cheap request tells whether the proxy can serve the nested module; without it the
      // full build would download hundreds of modules only to fail at the end.
      await run(go, ['mod', 'download', `github.com/temporalio/cli/cliext@${build.cliextPseudoVersion}`], {
        cwd: work,
        env: goEnv,
        quiet: true,
      });
      log(`Building Temporal CLI ${build.version} from Go modules (first run only; a few minutes)...`);
      await run(go, ['mod', 'tidy'], { cwd: work, env: goEnv, quiet: true });
      await run(go, ['install', 'github.com/temporalio/cli/cmd/temporal'], { cwd: work, env: goEnv, log });
    } else {
      log(`Building Temporal CLI ${build.version} from Go modules (first run only; a few minutes)...`);
      await run(go, ['install', `github.com/temporalio/cli/cmd/temporal@${build.version}`], {
        cwd: work,
        env: { ...goEnv, GOFLAGS: '' },
        log,
      });
    }
    const built = path.join(work, 'temporal');
    if (!isExecutable(built)) throw new Error('go install finished but produced no binary');
    fs.renameSync(built, target);
    return target;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

function writeWrapperModule(dir: string, build: WrappedBuild): void {
  fs.writeFileSync(
    path.join(dir, 'go.mod'),
    [
      'module flightdeck.local/temporal-cli-build',
      '',
      `go ${build.goVersion}`,
      '',
      `require github.com/temporalio/cli ${build.version}`,
      '',
      `replace github.com/temporalio/cli/cliext => github.com/temporalio/cli/cliext ${build.cliextPseudoVersion}`,
      '',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(dir, 'tools.go'),
    '//go:build tools\n\npackage tools\n\nimport _ "github.com/temporalio/cli/cmd/temporal"\n',
  );
}

/** Runs a build step; the error carries the tail of its output. */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; log?: Log; quiet?: boolean },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    const collect = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const heartbeat = options.quiet
      ? undefined
      : setInterval(() => options.log?.(`  still building (${command} ${args[0]})...`), 30_000);
    child.on('error', (error) => {
      if (heartbeat) clearInterval(heartbeat);
      reject(error);
    });
    child.on('close', (code) => {
      if (heartbeat) clearInterval(heartbeat);
      if (code === 0) resolve();
      else
        reject(new Error(`${path.basename(command)} ${args.join(' ')} exited with ${code}\n${tail.trim()}`));
    });
  });
}

/** The version line of a binary, for diagnostics. */
export function temporalCliVersion(binary: string): string {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return (result.stdout || result.stderr || '').trim();
}
