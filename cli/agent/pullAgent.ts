import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, type ApiClientOptions } from '../apiClient';

/**
 * The reference pull agent (`flightdeck agent run`): how to run jobs on a machine the server cannot
 * reach. It polls with jittered backoff, claims a job, heartbeats at a third of the lease, runs the
 * command with the job's resolved variables in its environment and the dispatch context in a JSON
 * file, and reports `successful` or `failure` with the exit code. On stop (SIGTERM) it lets a running
 * job finish within a grace period, or gives it back to the queue.
 */

export interface PullAgentOptions extends ApiClientOptions {
  workspaceId: string;
  jobAgentId: string;
  /** The shell command to run for each job; else the job configuration's `script`. */
  exec?: string;
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
  done: Promise<void>;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const OUTPUT_TAIL = 2000;
const FINAL_REPORT_BACKOFF_MS = 500;
const FINAL_REPORT_MAX_WAIT_MS = 30_000;

/** Variables as environment variables: names made valid, values as text (JSON for non-strings). */
export function variablesAsEnvironment(variables: Record<string, unknown> = {}): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([key, value]) => [
      ENV_NAME.test(key) ? key : key.replace(/[^A-Za-z0-9_]/g, '_').replace(/^(\d)/, '_$1'),
      typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  );
}

/**
 * A wrong key, workspace or agent id (401, 403, 404 on the poll) does not mend itself: the agent
 * stops with the reason instead of polling forever. Everything else is retried with backoff.
 */
export class AgentRefusedError extends Error {}
const REFUSALS = [401, 403, 404];

/** SIGTERM to the job's command and every process it started. */
function stopCommand(running: Running): void {
  const child = running.child;
  if (child?.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
}

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

  /** One status report: the server's answer, or the reason the request failed. */
  private sendStatus(running: Running, status: string, message: string): Promise<number | string> {
    return this.client
      .request('PUT', `${this.base}/jobs/${running.job.id}/status`, {
        status,
        message,
        claim_id: running.job.claim_id,
      })
      .then(
        (res) => res.status,
        (error: unknown) => (error as Error).message,
      );
  }

  private async report(running: Running, status: string, message: string): Promise<void> {
    if (running.abandoned) return;
    const answer = await this.sendStatus(running, status, message);
    if (typeof answer === 'string') throw new Error(answer);
    if (answer >= 300) this.options.log(`job ${running.job.id}: the ${status} report answered ${answer}`);
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
    const jobDir = path.join(this.options.workDir, job.id);
    fs.mkdirSync(jobDir, { recursive: true });
    const contextFile = path.join(jobDir, 'dispatch-context.json');
    fs.writeFileSync(contextFile, JSON.stringify(context, null, 2), { mode: 0o600 });

    const heartbeat = job.lease_seconds ? this.keepAlive(running, job.lease_seconds) : undefined;
    await this.report(running, 'in_progress', `running: ${command}`);
    const started = Date.now();
    let tail = '';
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      const child = spawn('/bin/sh', ['-c', command], {
        cwd: jobDir,
        // Its own process group: stopping the job stops everything the command started.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          ...variablesAsEnvironment(context.variables),
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
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    // The context holds the job's secrets: it goes with the command that needed it.
    fs.rmSync(contextFile, { force: true });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    // The lease is kept alive until the result is in: a report that needs retries must not lose it.
    try {
      if (running.abandoned) return;
      if (exit.code === 0) {
        log(`job ${job.id} successful in ${seconds} s`);
        await this.reportFinal(running, 'successful', 'exit code 0');
      } else {
        const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
        log(`job ${job.id} failed (${how}) in ${seconds} s`);
        await this.reportFinal(running, 'failure', `${how}${tail.trim() ? `\n${tail.trim()}` : ''}`);
      }
    } finally {
      heartbeat?.stop();
    }
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
          })
          .catch((error: unknown) => this.options.log(`heartbeat failed: ${(error as Error).message}`));
      },
      (leaseSeconds * 1000) / 3,
    );
    return { stop: () => clearInterval(timer) };
  }
}
