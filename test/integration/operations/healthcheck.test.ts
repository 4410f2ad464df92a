import { execFile } from 'node:child_process';
import path from 'node:path';
import { listen, type ApiServer } from '../../../api/server';
import { harnessValue } from '../../harness';
import { freePort } from '../../helpers/processes';
import { startTestStack, type TestStack } from '../../helpers/stack';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** Runs the container health check from source, as Docker would run the compiled one. */
function healthcheck(role: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'cli', 'healthcheck.ts'), role],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 30_000 },
      (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
    );
  });
}

describe('container health checks (cli/healthcheck.ts)', () => {
  let stack: TestStack;
  let api: ApiServer;
  let port: number;

  beforeAll(async () => {
    stack = await startTestStack();
    port = await freePort();
    api = await listen(stack.app.app, '127.0.0.1', port);
  });
  afterAll(async () => {
    await api.close();
    await stack.close();
  });

  const temporalEnv = (taskQueue: string) => ({
    TEMPORAL_ADDRESS: harnessValue('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
  });

  it('finds the worker of this host polling its task queue', async () => {
    expect(await healthcheck('worker', temporalEnv(stack.taskQueue))).toEqual({ code: 0, stderr: '' });
  });

  it('fails for a task queue no worker of this host polls', async () => {
    const result = await healthcheck('worker', temporalEnv(`${stack.taskQueue}-idle`));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no worker of .* polled task queue/);
  });

  it('checks the API through /healthz on the configured port', async () => {
    expect(await healthcheck('api', { FLIGHTDECK_PORT: String(port) })).toEqual({ code: 0, stderr: '' });
    const closed = await healthcheck('api', { FLIGHTDECK_PORT: String(await freePort()) });
    expect(closed.code).toBe(1);
    expect(closed.stderr).toMatch(/unhealthy: .*ECONNREFUSED/);
  });
});
