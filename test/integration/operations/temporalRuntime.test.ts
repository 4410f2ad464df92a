import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../../helpers/processes';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * The SDK runtime is one per process: each scenario installs it in a process of its own, the port
 * picker answering the given ports in turn.
 */
function installWithPorts(ports: number[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `
    const pino = require('pino');
    const { installTemporalRuntime } = require(${JSON.stringify(path.join(ROOT, 'worker', 'temporalRuntime.ts'))});
    const ports = ${JSON.stringify(ports)};
    installTemporalRuntime(pino({ level: 'silent' }), async () => ports.shift())
      .then((url) => fetch(url).then((res) => { console.log(url, res.status); process.exit(0); }))
      .catch((error) => { console.error(String(error)); process.exit(1); });`;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '-e', script],
      { cwd: ROOT, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("the Temporal SDK's metrics port (worker/temporalRuntime.ts)", () => {
  let taken: net.Server;
  let takenPort: number;

  beforeAll(async () => {
    takenPort = await freePort();
    taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(takenPort, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it('picks another port when the one it was given was taken before it bound it', async () => {
    const free = await freePort();
    const outcome = await installWithPorts([takenPort, free]);
    expect(outcome).toMatchObject({ code: 0, stdout: `http://127.0.0.1:${free}/metrics 200\n` });
  });

  it('gives up after five taken ports, saying why', async () => {
    const outcome = await installWithPorts([takenPort, takenPort, takenPort, takenPort, takenPort]);
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/address already in use/i);
  });
});
