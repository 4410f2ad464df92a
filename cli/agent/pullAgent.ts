import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { escapeControls } from '../../domain/displayText';
import { ApiClient, type ApiClientOptions } from '../apiClient';

/**
 * The reference pull agent (`flightdeck agent run`): how to run jobs on a machine the server cannot
 * reach. It polls with jittered backoff, claims a job, reports it `in_progress`, and only then writes
 * the dispatch context to a JSON file, heartbeats at a third of the lease and runs the command with
 * the job's resolved variables in its environment; it reports `successful` or `failure` with the exit
 * code. On stop (SIGTERM) it lets a running job finish within a grace period, or gives it back to
 * the queue. When a heartbeat says the job's cancel was asked, it sends the command SIGTERM, SIGKILL
 * at the cancel deadline if it still runs, and reports `cancelled`.
 */

export interface PullAgentOptions extends ApiClientOptions {
  workspaceId: string;
  jobAgentId: string;
  /** The shell command to run for each job; else the job configuration's `script`. */
  exec?: string;
  /** Variables the command also gets under their own names (docs/agents.md "The reference agent"). */
  plainVariables?: readonly string[];
  workDir: string;
  /** Longest pause between polls when the queue stays empty. */
  maxIdleSeconds: number;
  /** How long a running job may go on after a stop is asked for, before it is given back. */
  graceSeconds: number;
  log: (line: string) => void;
}

interface ClaimedJob {
  id: string;
  releaseId: string;
  jobAgentConfig: Record<string, unknown>;
  dispatchContext: {
    variables?: Record<string, unknown>;
    version?: { tag?: string };
    environment?: { name?: string };
    resource?: { identifier?: string };
  };
  lease_seconds?: number;
  claim_id?: string;
}

interface Running {
  job: ClaimedJob;
  child?: ChildProcess;
  /** Set when the job was given back or its claim was lost: nothing is reported for it. */
  abandoned: boolean;
  /** Set when a heartbeat said the job's cancel was asked: it is stopped and reported `cancelled`. */
  cancelled?: { killTimer: NodeJS.Timeout };
  done: Promise<void>;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The prefix of every variable in the command's environment; names under `FLIGHTDECK_` are the agent's. */
export const VARIABLE_PREFIX = 'FLIGHTDECK_VAR_';
const OUTPUT_TAIL = 2000;
const FINAL_REPORT_BACKOFF_MS = 500;
const FINAL_REPORT_MAX_WAIT_MS = 30_000;

/**
 * A job's variables as environment variables of its command, values as text (JSON for non-strings).
 * Whoever may write a workspace's variables chooses their names, and the command runs with the
 * agent's privileges: a name such as PATH, LD_PRELOAD, BASH_ENV or NODE_OPTIONS would decide what
 * the command loads and runs. So every variable goes in as `FLIGHTDECK_VAR_<name>` (the name made
 * shell-safe), which nothing but the command reads, and under its own name only when the agent's
 * operator listed that name (`--env`); no job chooses which variables the process runs with.
 */
export function variablesAsEnvironment(
  variables: Record<string, unknown> = {},
  plainNames: readonly string[] = [],
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(variables)) {
    const name = key.replace(/[^A-Za-z0-9_]/g, '_');
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    environment[VARIABLE_PREFIX + name] = text;
    if (plainNames.includes(name)) environment[name] = text;
  }
  return environment;
}

/** Why a name given to `--env` cannot be one, if it cannot. */
export function plainVariableProblem(name: string): string | undefined {
  if (!ENV_NAME.test(name)) return `${name} is not an environment variable name`;
  if (name.toUpperCase().startsWith('FLIGHTDECK_'))
    return `${name}: names under FLIGHTDECK_ are the agent's own`;
  return undefined;
}

/**
 * A wrong key, workspace or agent id (401, 403, 404 on the poll) does not mend itself: the agent
 * stops with the reason instead of polling forever. Everything else is retried with backoff.
 */
export class AgentRefusedError extends Error {}
const REFUSALS = [401, 403, 404];

/** A signal (SIGTERM unless said) to the job's command and every process it started. */
function stopCommand(running: Running, signal: NodeJS.Signals = 'SIGTERM'): void {
  const child = running.child;
  if (child?.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

/** Time kept back from a cancel deadline for the kill and the report to reach the server before it. */
const CANCEL_MARGIN_MS = 1_000;

export class PullAgent {
  private readonly client: ApiClient;
  private stopping = false;
  private stopped?: Promise<void>;
  private running?: Running;
  /** Aborted by stop: cuts short the pause between polls. */
  private readonly halt = new AbortController();

  constructor(private readonly options: PullAgentOptions) {
    this.client = new ApiClient(options);
  }

  private get base(): string {
    return `v1/workspaces/${this.options.workspaceId}`;
  }

  /** Polls and runs jobs until `stop()`; rejects only when the server refuses the agent. */
  async run(): Promise<void> {
    this.options.log(`agent ${this.options.jobAgentId}: polling ${this.options.apiUrl}`);
    try {
      await this.pollUntilStopped();
    } finally {
      // A stop may still be giving the job back: its request needs the client.
      await this.stopped;
      this.client.close();
    }
  }

  private async pollUntilStopped(): Promise<void> {
    const { log } = this.options;
    let idle = 1;
    while (!this.stopping) {
      const job = await this.claimNext().catch((error: unknown) => {
        if (error instanceof AgentRefusedError) throw error;
        log(`poll failed: ${(error as Error).message}`);
        return undefined;
      });
      if (!job) {
        // Jitter spreads many agents' polls; the backoff keeps an idle fleet cheap.
        const wait = idle * (0.8 + Math.random() * 0.4);
        await sleep(wait * 1000, undefined, { signal: this.halt.signal }).catch(() => undefined);
        idle = Math.min(idle * 2, this.options.maxIdleSeconds);
        continue;
      }
      idle = 1;
      if (this.stopping) {
        // The stop came while this claim was in flight: the job has not started, so it goes back.
        await this.giveBack(job).catch((error: unknown) =>
          log(`give back failed: ${(error as Error).message}`),
        );
        return;
      }
      this.running = this.start(job);
      await this.running.done;
      this.running = undefined;
    }
  }

  /**
   * Stops polling; a running job finishes within the grace period, or goes back to the queue.
   * Never rejects: a give-back that fails is logged, and the job's lease returns it in time.
   */
  stop(): Promise<void> {
    this.stopped ??= this.windDown().catch((error: unknown) =>
      this.options.log(`stopping: ${(error as Error).message}`),
    );
    return this.stopped;
  }

  private async windDown(): Promise<void> {
    this.stopping = true;
    this.halt.abort();
    const running = this.running;
    if (!running) return;
    this.options.log(`stopping: job ${running.job.id} may finish within ${this.options.graceSeconds} s`);
    const grace = new AbortController();
    const finished = await Promise.race([
      running.done.then(() => true),
      sleep(this.options.graceSeconds * 1000, false, { signal: grace.signal }),
    ]);
    grace.abort();
    if (finished) return;
    running.abandoned = true;
    stopCommand(running);
    await this.giveBack(running.job);
    await running.done;
  }

  private async giveBack(job: ClaimedJob): Promise<void> {
    const back = await this.client.request('POST', `${this.base}/jobs/${job.id}/requeue`, {
      claim_id: job.claim_id,
    });
    this.options.log(`job ${job.id} given back to the queue (${back.status})`);
  }

  private async claimNext(): Promise<ClaimedJob | undefined> {
    const poll = await this.client.request<{ items: { id: string }[] }>(
      'GET',
      `${this.base}/job-agents/${this.options.jobAgentId}/jobs?status=queued&limit=32`,
    );
    if (REFUSALS.includes(poll.status)) {
      const detail = (poll.body as { detail?: string } | undefined)?.detail ?? '';
      throw new AgentRefusedError(
        `the server refused the poll (${poll.status}${detail ? `: ${detail}` : ''}); check --api, --key, --workspace and --agent`,
      );
    }
    if (poll.status !== 200) throw new Error(`poll answered ${poll.status}: ${JSON.stringify(poll.body)}`);
    const items = poll.body.items;
    // Agents that start at the same oldest job collide on every claim; a random start spreads them.
    const start = Math.floor(Math.random() * items.length);
    for (let n = 0; n < items.length; n++) {
      const item = items[(n + start) % items.length]!;
      if (this.stopping) return undefined;
      const claim = await this.client.request<ClaimedJob>(
        'POST',
        `${this.base}/job-agents/${this.options.jobAgentId}/jobs/${item.id}/claim`,
      );
      if (claim.status === 200) return claim.body;
      if (claim.status !== 409 && claim.status !== 404) {
        throw new Error(`claim answered ${claim.status}: ${JSON.stringify(claim.body)}`);
      }
    }
    return undefined;
  }

  private start(job: ClaimedJob): Running {
    const running: Running = { job, abandoned: false, done: Promise.resolve() };
    running.done = this.execute(running).catch((error: unknown) => {
      this.options.log(`job ${job.id}: ${(error as Error).message}`);
    });
    return running;
  }

  /**
   * One status report: the server's answer, or the reason the request failed. The message (the
   * command, the output's tail) is sent with its control characters escaped: the server refuses
   * them in a message, and a coloured output or a progress bar must not lose the job's result.
   */
  private sendStatus(running: Running, status: string, message: string): Promise<number | string> {
    return this.client
      .request('PUT', `${this.base}/jobs/${running.job.id}/status`, {
        status,
        message: escapeControls(message, 'multi'),
        claim_id: running.job.claim_id,
      })
      .then(
        (res) => res.status,
        (error: unknown) => (error as Error).message,
      );
  }

  /**
   * The job's result is what the release waits for: it is sent until the server takes it or refuses
   * it for good (a 4xx other than 408 and 429), with backoff, unless the job is given up meanwhile
   * (its claim lost, or the agent gave it back on stop).
   */
  private async reportFinal(running: Running, status: string, message: string): Promise<void> {
    for (let attempt = 0; !running.abandoned; attempt++) {
      const answer = await this.sendStatus(running, status, message);
      if (typeof answer === 'number' && answer < 300) return;
      if (typeof answer === 'number' && answer < 500 && answer !== 408 && answer !== 429) {
        // A retry after a lost answer meets the claim its first attempt ended: 409, naming the status.
        const resent = attempt > 0 && answer === 409 ? ' (an earlier attempt may have been taken)' : '';
        this.options.log(`job ${running.job.id}: the ${status} report was refused (${answer})${resent}`);
        return;
      }
      const wait = Math.min(FINAL_REPORT_BACKOFF_MS * 2 ** attempt, FINAL_REPORT_MAX_WAIT_MS);
      this.options.log(
        `job ${running.job.id}: the ${status} report failed (${answer}); again in ${(wait / 1000).toFixed(1)} s`,
      );
      await sleep(wait * (0.8 + Math.random() * 0.4));
    }
  }

  /**
   * The first report, before anything of the job touches this machine: the claim made the job
   * `in_progress`, and this says what runs. Answers whether the job may run. A refusal (the job
   * cancelled, the claim gone) or no answer means it does not; a job not refused goes back to the
   * queue, or its lease brings it back if that fails too.
   */
  private async reportStart(running: Running, command: string): Promise<boolean> {
    const { job } = running;
    const answer = await this.sendStatus(running, 'in_progress', `running: ${command}`);
    if (typeof answer === 'number' && answer < 300) return true;
    this.options.log(
      `job ${job.id}: the in_progress report ${typeof answer === 'number' ? `answered ${answer}` : `failed (${answer})`}; not running it`,
    );
    if (answer !== 404 && answer !== 409) {
      await this.giveBack(job).catch((error: unknown) =>
        this.options.log(`give back failed: ${(error as Error).message}`),
      );
    }
    return false;
  }

  private async execute(running: Running): Promise<void> {
    const { job } = running;
    const { log } = this.options;
    const context = job.dispatchContext;
    log(
      `claimed job ${job.id}: ${context.version?.tag ?? '?'} to ${context.resource?.identifier ?? '?'} in ${context.environment?.name ?? '?'}` +
        (job.lease_seconds ? ` (lease ${job.lease_seconds} s)` : ''),
    );
    const command =
      this.options.exec ??
      (typeof job.jobAgentConfig.script === 'string' ? job.jobAgentConfig.script : undefined);
    if (!command) {
      await this.reportFinal(
        running,
        'failure',
        'no command: run the agent with --exec, or set `script` in the job configuration',
      );
      return;
    }
    // A stop may have given the job back while the report was on its way.
    if (!(await this.reportStart(running, command)) || running.abandoned) return;

    const jobDir = path.join(this.options.workDir, job.id);
    const contextFile = path.join(jobDir, 'dispatch-context.json');
    let heartbeat: { stop(): void } | undefined;
    // Whatever fails from here on, the heartbeats stop and the context, which holds the job's secrets, goes.
    try {
      fs.mkdirSync(jobDir, { recursive: true });
      fs.writeFileSync(contextFile, JSON.stringify(context, null, 2), { mode: 0o600 });
      heartbeat = job.lease_seconds ? this.keepAlive(running, job.lease_seconds) : undefined;
      const started = Date.now();
      const { exit, tail } = await this.runCommand(running, command, jobDir, contextFile);
      // The context goes with the command that needed it, before a final report that may take retries.
      fs.rmSync(contextFile, { force: true });
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      // The lease is kept alive until the result is in: a report that needs retries must not lose it.
      if (running.abandoned) return;
      if (running.cancelled) {
        clearTimeout(running.cancelled.killTimer);
        const how = exit.signal ? `stopped by ${exit.signal}` : `exit code ${exit.code}`;
        log(`job ${job.id} cancelled (${how}) in ${seconds} s`);
        await this.reportFinal(running, 'cancelled', `cancelled on request: ${how}`);
      } else if (exit.code === 0) {
        log(`job ${job.id} successful in ${seconds} s`);
        await this.reportFinal(running, 'successful', 'exit code 0');
      } else {
        const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
        log(`job ${job.id} failed (${how}) in ${seconds} s`);
        await this.reportFinal(running, 'failure', `${how}${tail.trim() ? `\n${tail.trim()}` : ''}`);
      }
    } finally {
      heartbeat?.stop();
      fs.rmSync(contextFile, { force: true });
    }
  }

  /** Runs the job's command in its own process group; answers how it ended and its output's tail. */
  private runCommand(
    running: Running,
    command: string,
    jobDir: string,
    contextFile: string,
  ): Promise<{ exit: { code: number | null; signal: NodeJS.Signals | null }; tail: string }> {
    const { job } = running;
    const context = job.dispatchContext;
    const { log } = this.options;
    let tail = '';
    return new Promise((resolve) => {
      const child = spawn('/bin/sh', ['-c', command], {
        cwd: jobDir,
        // Its own process group: stopping the job stops everything the command started.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          ...variablesAsEnvironment(context.variables, this.options.plainVariables),
          FLIGHTDECK_JOB_ID: job.id,
          FLIGHTDECK_RELEASE_ID: job.releaseId,
          FLIGHTDECK_DISPATCH_CONTEXT: contextFile,
          FLIGHTDECK_VERSION_TAG: context.version?.tag ?? '',
          FLIGHTDECK_ENVIRONMENT: context.environment?.name ?? '',
          FLIGHTDECK_RESOURCE: context.resource?.identifier ?? '',
        },
      });
      running.child = child;
      const relay = (chunk: Buffer) => {
        const text = chunk.toString();
        tail = (tail + text).slice(-OUTPUT_TAIL);
        for (const line of text.split('\n').filter(Boolean)) log(`[${job.id.slice(-8)}] ${line}`);
      };
      child.stdout!.on('data', relay);
      child.stderr!.on('data', relay);
      child.on('error', (error) => {
        tail += `\n${error.message}`;
      });
      child.on('close', (code, signal) => resolve({ exit: { code, signal }, tail }));
    });
  }

  /** A cancel the server asked: SIGTERM now, SIGKILL just before the deadline if the command still runs. */
  private cancel(running: Running, deadline: string | undefined): void {
    const left = deadline ? Date.parse(deadline) - Date.now() - CANCEL_MARGIN_MS : 0;
    this.options.log(`job ${running.job.id}: cancel requested; stopping it (deadline ${deadline ?? 'now'})`);
    running.cancelled = { killTimer: setTimeout(() => stopCommand(running, 'SIGKILL'), Math.max(0, left)) };
    stopCommand(running);
  }

  /** Heartbeats at a third of the lease; a lost claim stops the job without reporting. */
  private keepAlive(running: Running, leaseSeconds: number): { stop(): void } {
    const timer = setInterval(
      () => {
        void this.client
          .request('POST', `${this.base}/jobs/${running.job.id}/heartbeat`, {
            claim_id: running.job.claim_id,
          })
          .then((res) => {
            if (res.status === 404 || res.status === 409) {
              this.options.log(`job ${running.job.id}: the claim is gone (${res.status}); stopping it`);
              running.abandoned = true;
              stopCommand(running);
            }
            const lease = res.body as { cancelRequested?: boolean; cancelDeadline?: string } | undefined;
            if (res.status === 200 && lease?.cancelRequested && !running.cancelled)
              this.cancel(running, lease.cancelDeadline);
          })
          .catch((error: unknown) => this.options.log(`heartbeat failed: ${(error as Error).message}`));
      },
      (leaseSeconds * 1000) / 3,
    );
    return { stop: () => clearInterval(timer) };
  }
}
