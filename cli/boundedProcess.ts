import { spawn } from 'node:child_process';
import os from 'node:os';

/** A short process to run: its command line, environment, input and limits. */
export interface BoundedProcessRequest {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  stdin: string;
  /** Stopped (SIGKILL) past this. */
  timeoutMs: number;
  /** What is kept of each of stdout and stderr, in characters. */
  outputLimit: number;
  /** Set on the process as soon as it exists. */
  niceness: number;
}

/** How it ended: its exit code, what it printed (up to the limit), whether it was stopped. */
export interface BoundedProcessOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
  stopped?: 'process';
}

/** Runs the process to its end, or stops it at its timeout. */
export function runBoundedProcess(request: BoundedProcessRequest): Promise<BoundedProcessOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(request.command, request.args, { stdio: ['pipe', 'pipe', 'pipe'], env: request.env });
    if (child.pid !== undefined) {
      try {
        os.setPriority(child.pid, request.niceness);
      } catch {
        // The process has already ended.
      }
    }
    let stdout = '';
    let stderr = '';
    let stopped = false;
    const timer = setTimeout(() => {
      stopped = true;
      child.kill('SIGKILL');
    }, request.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < request.outputLimit) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < request.outputLimit) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ...(stopped ? { stopped: 'process' as const } : {}) });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(request.stdin);
  });
}
