import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UnavailableError } from '../domain/errors';
import { regoPackage, type RegoEngine, type RegoSession } from '../domain/planValidation';
import { FairSlots } from '../domain/fairSlots';
import type { BoundedProcessOutcome } from './boundedProcess';
import { ProcessLauncher } from './processLauncher';
import { findOnPath, isExecutable, run, temporalCacheDir } from './temporalCli';

/**
 * Open Policy Agent, for the `planValidationOpa` policy rule. No npm package evaluates Rego, so, as
 * with Temporal, a machine builds the `opa` binary from Go modules once into the per-user cache
 * (`flightdeck opa ensure`; a minute or so); FLIGHTDECK_OPA_PATH names another binary.
 *
 * Each check or evaluation is a short `opa` process: a tenant's policy runs outside the service's
 * process, in the sandbox `OpaEngine` describes.
 */

export const OPA_VERSION = 'v1.22.2';
/** Niceness of `opa` processes: below the API's and the worker's, so their requests win the CPU. */
const OPA_NICENESS = 10;

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

/**
 * Builtins a tenant's policy may not call (docs/security.md "OPA sandbox"): they reach
 * the network, files or the server's environment, or allocate without bound.
 */
const FORBIDDEN_BUILTINS = new Set([
  // The network (and signing requests for it).
  'http.send',
  'net.lookup_ip_addr',
  'providers.aws.sign_req',
  // A JSON schema's `$ref` is loaded: `file://` from the server's disk, `http://` from anywhere.
  'json.verify_schema',
  'json.match_schema',
  // The server's environment variables and configuration.
  'opa.runtime',
  // Memory without bound.
  'net.cidr_expand',
]);

/**
 * A schema in a METADATA annotation is loaded when the policy compiles, its `$ref`s too (files
 * whatever the capabilities say): a policy with annotations is refused before it reaches `opa`.
 */
const METADATA_ANNOTATION = /#\s*METADATA/;

/** Why the sandbox refuses the source before any `opa` process sees it; undefined if it does not. */
function sandboxRefusal(source: string): string | undefined {
  if (METADATA_ANNOTATION.test(source))
    return 'METADATA annotations are not allowed in plan validation policies (their schemas could load files)';
  return undefined;
}

/** How `opa` processes share the machine (docs/security.md "OPA sandbox"). */
export interface OpaLimits {
  /** `opa` processes at once: a burst of releases queues rather than forking without bound. */
  slots: number;
  /** Of which one workspace holds at most: the others still get a slot within one process's time. */
  slotsPerWorkspace: number;
  /** How long one `opa` process may run. */
  processTimeoutMs: number;
  /** The `opa` time one session (a policy write, a release's evaluation) may spend over all its calls. */
  sessionBudgetMs: number;
  /** A session's call that has not got a slot this long after the session began is not run. */
  sessionDeadlineMs: number;
}

export const OPA_LIMITS: OpaLimits = {
  slots: 4,
  slotsPerWorkspace: 2,
  processTimeoutMs: 10_000,
  sessionBudgetMs: 20_000,
  // Under the one minute a release's workflow gives the step that evaluates its policies.
  sessionDeadlineMs: 40_000,
};

const ADDRESS_SPACE_BYTES = 2 * 1024 ** 3;
const OUTPUT_LIMIT = 1024 * 1024;

interface Outcome extends Omit<BoundedProcessOutcome, 'stopped'> {
  /** The process was stopped: it ran past this limit. */
  stopped?: 'process' | 'budget';
}

/** The `opa` time a session has left, and until when its calls may start. */
class SessionBudget {
  private spentMs = 0;
  readonly startsBy: number;

  constructor(
    readonly workspaceId: string,
    private readonly limits: OpaLimits,
  ) {
    this.startsBy = Date.now() + limits.sessionDeadlineMs;
  }

  leftMs(): number {
    return this.limits.sessionBudgetMs - this.spentMs;
  }

  spend(ms: number): void {
    this.spentMs += ms;
  }
}

/**
 * Runs Rego through an `opa` binary (`RegoEngine`); without a binary every call fails with why. Each
 * call is a process, in a sandbox: no network (`allow_net: []`), no builtin that reads files, the
 * network or the environment, an empty environment, a timeout and an address-space limit; the
 * processes are shared fairly between workspaces, and each session has a budget of `opa` time.
 */
export class OpaEngine implements RegoEngine {
  private capabilities: Promise<string> | undefined;
  private readonly slots: FairSlots;
  private readonly prlimit = findOnPath('prlimit', process.env);
  private readonly launcher = new ProcessLauncher();

  constructor(
    private readonly binary: string | undefined,
    private readonly limits: OpaLimits = OPA_LIMITS,
  ) {
    this.slots = new FairSlots(limits.slots, limits.slotsPerWorkspace);
  }

  session(workspaceId: string): RegoSession {
    const budget = new SessionBudget(workspaceId, this.limits);
    return {
      check: (source) => this.check(budget, source),
      deny: (source, input) => this.deny(budget, source, input),
    };
  }

  private async check(budget: SessionBudget, source: string): Promise<string | undefined> {
    const pkg = regoPackage(source);
    if (!pkg) return 'the policy declares no package (e.g. `package main`)';
    const refused = sandboxRefusal(source);
    if (refused) return refused;
    return this.withPolicy(source, async (file) => {
      // Evaluating on an empty input compiles the policy under the capabilities too.
      let probe: Outcome;
      try {
        probe = await this.evalDeny(budget, file, pkg, {});
      } catch (error) {
        if (error instanceof BudgetSpentError) return error.message;
        throw error;
      }
      if (probe.code !== 0) return this.failure(probe, file);
      const value = resultValue(probe.stdout);
      if (value === undefined) return `the policy defines no \`deny\` rule in package ${pkg}`;
      if (!Array.isArray(value)) return '`deny` must be a set of messages (deny contains msg if { … })';
      return undefined;
    });
  }

  private async deny(budget: SessionBudget, source: string, input: unknown): Promise<string[]> {
    const pkg = regoPackage(source);
    if (!pkg) throw new OpaError('the policy declares no package');
    const refused = sandboxRefusal(source);
    if (refused) throw new OpaError(refused);
    return this.withPolicy(source, async (file) => {
      const evaluated = await this.evalDeny(budget, file, pkg, input);
      if (evaluated.code !== 0) throw new OpaError(this.failure(evaluated, file));
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

  /** The policy's `deny` set for `input`, as `opa eval` answers it; compile errors are its errors. */
  private async evalDeny(budget: SessionBudget, file: string, pkg: string, input: unknown): Promise<Outcome> {
    const capabilities = await this.capabilitiesFile();
    return this.run(
      budget,
      [
        'eval',
        '--format',
        'json',
        '--capabilities',
        capabilities,
        '--data',
        file,
        '--stdin-input',
        `data.${pkg}.deny`,
      ],
      JSON.stringify(input),
    );
  }

  /**
   * The capabilities file: the binary's own builtins but the forbidden ones, and no host to reach
   * (`allow_net` absent would allow every host); written once per process.
   */
  private capabilitiesFile(): Promise<string> {
    this.capabilities ??= this.writeCapabilities().catch((error: unknown) => {
      // A failure is not remembered: the next call tries again.
      this.capabilities = undefined;
      throw error;
    });
    return this.capabilities;
  }

  private async writeCapabilities(): Promise<string> {
    const listed = await this.spawn(['capabilities', '--current'], undefined, this.limits.processTimeoutMs);
    if (listed.code !== 0) throw new OpaError(`opa capabilities failed: ${this.failure(listed)}`);
    const capabilities = JSON.parse(listed.stdout) as { builtins: { name: string }[]; allow_net?: string[] };
    capabilities.builtins = capabilities.builtins.filter((builtin) => !FORBIDDEN_BUILTINS.has(builtin.name));
    capabilities.allow_net = [];
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'flightdeck-opa-'));
    const file = path.join(dir, 'capabilities.json');
    await fs.promises.writeFile(file, JSON.stringify(capabilities));
    return file;
  }

  /** Writes the policy to a private file for the call, removed after. */
  private async withPolicy<T>(source: string, use: (file: string) => Promise<T>): Promise<T> {
    this.requireBinary();
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'flightdeck-rego-'));
    const file = path.join(dir, 'policy.rego');
    await fs.promises.writeFile(file, source);
    try {
      return await use(file);
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
  }

  /** One `opa` process of a session: in one of its workspace's slots, within the session's budget. */
  private async run(budget: SessionBudget, args: string[], stdin: string): Promise<Outcome> {
    if (budget.leftMs() <= 0) throw new BudgetSpentError(this.limits);
    const release = await this.slots.acquire(budget.workspaceId);
    try {
      if (Date.now() > budget.startsBy)
        throw new UnavailableError(
          'Open Policy Agent is busy: the policy was not run in time; try again shortly',
        );
      const left = budget.leftMs();
      if (left <= 0) throw new BudgetSpentError(this.limits);
      const byBudget = left < this.limits.processTimeoutMs;
      const started = performance.now();
      try {
        const outcome = await this.spawn(args, stdin, byBudget ? left : this.limits.processTimeoutMs);
        return outcome.stopped && byBudget ? { ...outcome, stopped: 'budget' } : outcome;
      } finally {
        budget.spend(performance.now() - started);
      }
    } finally {
      release();
    }
  }

  private spawn(args: string[], stdin: string | undefined, timeoutMs: number): Promise<Outcome> {
    const binary = this.requireBinary();
    const [command, commandArgs] = this.prlimit
      ? [this.prlimit, [`--as=${ADDRESS_SPACE_BYTES}`, '--', binary, ...args]]
      : [binary, args];
    return this.launcher.run({
      command,
      args: commandArgs,
      // Only what the Go runtime needs: no secrets of this process reach the policy's. One core at
      // most: a tenant's policy never holds every core of the machine at once.
      env: { PATH: process.env.PATH ?? '', GOMEMLIMIT: '512MiB', GOMAXPROCS: '1' },
      stdin: stdin ?? '',
      timeoutMs,
      outputLimit: OUTPUT_LIMIT,
      // A tenant's policy yields the CPU to the requests this process serves.
      niceness: OPA_NICENESS,
    });
  }

  /** Why a process failed, in words for the policy's author (the policy file named `policy.rego`). */
  private failure(outcome: Outcome, file?: string): string {
    if (outcome.stopped === 'budget') return budgetSpent(this.limits);
    if (outcome.stopped) return `the policy ran longer than ${this.limits.processTimeoutMs / 1000} s`;
    if (/out of memory|cannot allocate/i.test(outcome.stderr)) return 'the policy ran out of memory';
    const parsed = safeJson(outcome.stdout) ?? safeJson(outcome.stderr);
    const errors = (parsed as { errors?: OpaErrorEntry[] } | undefined)?.errors;
    const text = errors?.length
      ? errors
          .slice(0, 5)
          .map((error) =>
            error.location?.row
              ? `line ${error.location.row}, column ${error.location.col ?? 1}: ${error.message ?? 'error'}`
              : (error.message ?? 'error'),
          )
          .join('; ')
      : `opa exited with ${outcome.code}: ${outcome.stderr.split('\n')[0]?.slice(0, 300) ?? ''}`;
    return file ? text.replaceAll(file, 'policy.rego') : text;
  }
}

interface OpaErrorEntry {
  message?: string;
  location?: { row?: number; col?: number };
}

function budgetSpent(limits: OpaLimits): string {
  return `Open Policy Agent time ran out: ${limits.sessionBudgetMs / 1000} s for all the policies of one write or evaluation`;
}

class BudgetSpentError extends OpaError {
  constructor(limits: OpaLimits) {
    super(budgetSpent(limits));
  }
}

function resultValue(stdout: string): unknown {
  const parsed = JSON.parse(stdout) as { result?: { expressions?: { value?: unknown }[] }[] };
  return parsed.result?.[0]?.expressions?.[0]?.value;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

let processEngine: OpaEngine | undefined;

/** The process's Rego engine: the `opa` binary found when first asked (FLIGHTDECK_OPA_PATH, the cache, PATH), if any. */
export function processRegoEngine(): OpaEngine {
  processEngine ??= new OpaEngine(findOpa());
  return processEngine;
}
