import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UnavailableError } from '../domain/errors';
import { regoPackage, type RegoEngine } from '../domain/planValidation';
import { findOnPath, isExecutable, run, temporalCacheDir } from './temporalCli';

/**
 * Open Policy Agent, for the `planValidationOpa` policy rule. No npm package evaluates Rego, so, as
 * with Temporal, a machine builds the `opa` binary from Go modules once into the per-user cache
 * (`flightdeck opa ensure`; a minute or so); FLIGHTDECK_OPA_PATH names another binary.
 *
 * Each check or evaluation is a short `opa` process: a tenant's policy runs outside the service's
 * process, under a timeout and an address-space limit, with the builtins that reach the network or
 * the process's environment removed (`http.send`, `net.lookup_ip_addr`, `opa.runtime`, …).
 */

export const OPA_VERSION = 'v1.22.2';
const OPA_MODULE = 'github.com/open-policy-agent/opa';

export class OpaError extends Error {}

type Log = (line: string) => void;

function cachedOpa(env: NodeJS.ProcessEnv): string {
  return path.join(temporalCacheDir(env), `opa-${OPA_VERSION}`, 'opa');
}

/** Looks without building: FLIGHTDECK_OPA_PATH, then the cache, then PATH. */
export function findOpa(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.FLIGHTDECK_OPA_PATH?.trim();
  if (fromEnv) {
    if (!isExecutable(fromEnv))
      throw new OpaError(`FLIGHTDECK_OPA_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const cached = cachedOpa(env);
  if (isExecutable(cached)) return cached;
  return findOnPath('opa', env);
}

/** Finds `opa`, building it into the cache when it is nowhere to be found. */
export async function ensureOpa(
  log: Log = (line) => process.stderr.write(`${line}\n`),
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const found = findOpa(env);
  if (found) return found;
  const go = findOnPath('go', env);
  if (!go) {
    throw new OpaError(
      'Open Policy Agent was not found and Go is not installed to build it: install Go 1.25 or newer, ' +
        'or set FLIGHTDECK_OPA_PATH to an `opa` binary.',
    );
  }
  const target = cachedOpa(env);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const work = fs.mkdtempSync(path.join(path.dirname(target), '.build-'));
  try {
    log(`Building Open Policy Agent ${OPA_VERSION} from Go modules (first run only; a minute or so)...`);
    await run(go, ['install', '-ldflags=-s -w', `${OPA_MODULE}@${OPA_VERSION}`], {
      cwd: work,
      env: { ...env, CGO_ENABLED: '0', GOBIN: work, GOFLAGS: '-mod=mod' },
      log,
    });
    const built = path.join(work, 'opa');
    if (!isExecutable(built)) throw new OpaError('go install finished but produced no binary');
    fs.renameSync(built, target);
    return target;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Builtins a tenant's policy may not call: they reach the network or the server's environment, or allocate without bound. */
const FORBIDDEN_BUILTINS = new Set([
  'http.send',
  'net.lookup_ip_addr',
  'net.cidr_expand',
  'opa.runtime',
  'providers.aws.sign_req',
]);

/** How long one `opa` process may run, and the address space it may take. */
const PROCESS_TIMEOUT_MS = 10_000;
const ADDRESS_SPACE_BYTES = 2 * 1024 ** 3;
const OUTPUT_LIMIT = 1024 * 1024;
/** `opa` processes at once: a burst of releases queues rather than forking without bound. */
const CONCURRENCY = 4;

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Runs Rego through an `opa` binary (`RegoEngine`); without a binary every call fails with why. */
export class OpaEngine implements RegoEngine {
  private capabilities: Promise<string> | undefined;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly prlimit = findOnPath('prlimit', process.env);

  constructor(private readonly binary: string | undefined) {}

  async check(source: string): Promise<string | undefined> {
    const pkg = regoPackage(source);
    if (!pkg) return 'the policy declares no package (e.g. `package main`)';
    return this.withPolicy(source, async (file) => {
      const checked = await this.opa([
        'check',
        '--format',
        'json',
        '--capabilities',
        await this.capabilitiesFile(),
        file,
      ]);
      if (checked.code !== 0) return describeCheckErrors(checked, file);
      const probe = await this.evalDeny(file, pkg, {});
      if (probe.code !== 0) return failure(probe);
      const value = resultValue(probe.stdout);
      if (value === undefined) return `the policy defines no \`deny\` rule in package ${pkg}`;
      if (!Array.isArray(value)) return '`deny` must be a set of messages (deny contains msg if { … })';
      return undefined;
    });
  }

  async deny(source: string, input: unknown): Promise<string[]> {
    const pkg = regoPackage(source);
    if (!pkg) throw new OpaError('the policy declares no package');
    return this.withPolicy(source, async (file) => {
      const evaluated = await this.evalDeny(file, pkg, input);
      if (evaluated.code !== 0) throw new OpaError(failure(evaluated));
      const value = resultValue(evaluated.stdout);
      const messages = Array.isArray(value) ? value : [];
      return messages
        .map((message) => (typeof message === 'string' ? message : JSON.stringify(message)))
        .sort();
    });
  }

  private requireBinary(): string {
    if (!this.binary)
      throw new UnavailableError(
        'Open Policy Agent is not installed on this server (run `flightdeck opa ensure`)',
      );
    return this.binary;
  }

  /** The policy's `deny` set for `input`, as `opa eval` answers it. */
  private async evalDeny(file: string, pkg: string, input: unknown): Promise<Outcome> {
    return this.opa(
      [
        'eval',
        '--format',
        'json',
        '--capabilities',
        await this.capabilitiesFile(),
        '--data',
        file,
        '--stdin-input',
        `data.${pkg}.deny`,
      ],
      JSON.stringify(input),
    );
  }

  /** The capabilities file: the binary's own builtins but the forbidden ones; written once per process. */
  private capabilitiesFile(): Promise<string> {
    this.capabilities ??= this.writeCapabilities().catch((error: unknown) => {
      // A failure is not remembered: the next call tries again.
      this.capabilities = undefined;
      throw error;
    });
    return this.capabilities;
  }

  private async writeCapabilities(): Promise<string> {
    const listed = await this.opa(['capabilities', '--current']);
    if (listed.code !== 0) throw new OpaError(`opa capabilities failed: ${failure(listed)}`);
    const capabilities = JSON.parse(listed.stdout) as { builtins: { name: string }[] };
    capabilities.builtins = capabilities.builtins.filter((builtin) => !FORBIDDEN_BUILTINS.has(builtin.name));
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'flightdeck-opa-'));
    const file = path.join(dir, 'capabilities.json');
    await fs.promises.writeFile(file, JSON.stringify(capabilities));
    return file;
  }

  /** Writes the policy to a private file for the call, removed after. */
  private async withPolicy<T>(source: string, use: (file: string) => Promise<T>): Promise<T> {
    this.requireBinary();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-rego-'));
    const file = path.join(dir, 'policy.rego');
    fs.writeFileSync(file, source);
    try {
      return await use(file);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  private async opa(args: string[], stdin?: string): Promise<Outcome> {
    if (this.running >= CONCURRENCY) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await this.spawn(args, stdin);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private spawn(args: string[], stdin: string | undefined): Promise<Outcome> {
    const binary = this.requireBinary();
    const [command, commandArgs] = this.prlimit
      ? [this.prlimit, [`--as=${ADDRESS_SPACE_BYTES}`, '--', binary, ...args]]
      : [binary, args];
    return new Promise((resolve, reject) => {
      const child = spawn(command, commandArgs, {
        stdio: ['pipe', 'pipe', 'pipe'],
        // Only what the Go runtime needs: no secrets of this process reach the policy's.
        env: { PATH: process.env.PATH ?? '', GOMEMLIMIT: '512MiB' },
      });
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, PROCESS_TIMEOUT_MS);
      child.stdout.on('data', (chunk: Buffer) => {
        if (stdout.length < OUTPUT_LIMIT) stdout += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        if (stderr.length < OUTPUT_LIMIT) stderr += chunk.toString('utf8');
      });
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, timedOut });
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(stdin ?? '');
    });
  }
}

function resultValue(stdout: string): unknown {
  const parsed = JSON.parse(stdout) as { result?: { expressions?: { value?: unknown }[] }[] };
  return parsed.result?.[0]?.expressions?.[0]?.value;
}

function failure(outcome: Outcome): string {
  if (outcome.timedOut) return `the policy ran longer than ${PROCESS_TIMEOUT_MS / 1000} s`;
  if (/out of memory|cannot allocate/i.test(outcome.stderr)) return 'the policy ran out of memory';
  const parsed = safeJson(outcome.stdout) ?? safeJson(outcome.stderr);
  const errors = (parsed as { errors?: { message?: string }[] } | undefined)?.errors;
  if (errors?.length) return errors.map((error) => error.message ?? 'error').join('; ');
  return `opa exited with ${outcome.code}: ${outcome.stderr.split('\n')[0]?.slice(0, 300) ?? ''}`;
}

function describeCheckErrors(outcome: Outcome, file: string): string {
  const parsed = safeJson(outcome.stdout) ?? safeJson(outcome.stderr);
  const errors = (parsed as { errors?: { message: string; location?: { row?: number; col?: number } }[] })
    ?.errors;
  if (!errors?.length) return failure(outcome);
  return errors
    .slice(0, 5)
    .map((error) =>
      error.location?.row
        ? `line ${error.location.row}, column ${error.location.col ?? 1}: ${error.message}`
        : error.message,
    )
    .join('; ')
    .replaceAll(file, 'policy.rego');
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
