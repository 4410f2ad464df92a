import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PullAgent } from '../../cli/agent/pullAgent';
import { eventually } from '../helpers/eventually';

/**
 * Issue 13 (10): the reference agent sends a job's result until the server takes it, with backoff
 * over 5xx answers, stops at a refusal (4xx), and removes the job's context file (it holds the
 * job's secrets) once the command has ended. The server here is a stub of the four pull endpoints.
 */
describe('reference agent, final reports', () => {
  let server: http.Server;
  let url: string;
  let workDir: string;
  const reports: { status: string; answered: number }[] = [];
  let failuresLeft = 0;
  let finalAnswer = 202;
  let queued: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const reply = (status: number, body: unknown = {}) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        const route = req.url ?? '';
        if (req.method === 'GET' && route.includes('/jobs?status=queued')) {
          return reply(200, { items: queued.map((id) => ({ id })) });
        }
        const claimed = /\/jobs\/([^/]+)\/claim$/.exec(route);
        if (req.method === 'POST' && claimed) {
          queued = queued.filter((id) => id !== claimed[1]);
          return reply(200, {
            id: claimed[1],
            releaseId: 'release-1',
            jobAgentConfig: {},
            dispatchContext: { variables: { SECRET: 's3cr3t' } },
          });
        }
        if (req.method === 'PUT' && route.endsWith('/status')) {
          const { status } = JSON.parse(Buffer.concat(chunks).toString()) as { status: string };
          let answered = 202;
          if (status !== 'in_progress') {
            answered = failuresLeft > 0 ? 503 : finalAnswer;
            if (failuresLeft > 0) failuresLeft--;
          }
          reports.push({ status, answered });
          return reply(answered);
        }
        reply(404);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fd-agent-'));
    reports.length = 0;
  });
  afterEach(() => fs.rmSync(workDir, { recursive: true, force: true }));

  const runAgent = async (jobId: string, until: () => boolean) => {
    queued = [jobId];
    const agent = new PullAgent({
      apiUrl: url,
      apiKey: 'fdk_test',
      workspaceId: 'ws',
      jobAgentId: 'agent',
      exec: 'test -f "$FLIGHTDECK_DISPATCH_CONTEXT" && grep -q s3cr3t "$FLIGHTDECK_DISPATCH_CONTEXT"',
      workDir,
      maxIdleSeconds: 1,
      graceSeconds: 1,
      log: () => undefined,
    });
    const running = agent.run();
    await eventually(() => until() || undefined, { what: 'the final report', timeoutMs: 15_000 });
    await agent.stop();
    await running;
  };

  it('retries the result over 5xx until it is accepted, and removes the context file', async () => {
    failuresLeft = 3;
    finalAnswer = 202;
    await runAgent('job-retried', () =>
      reports.some((r) => r.status !== 'in_progress' && r.answered === 202),
    );
    expect(reports.map((r) => `${r.status} ${r.answered}`)).toEqual([
      'in_progress 202',
      'successful 503',
      'successful 503',
      'successful 503',
      'successful 202',
    ]);
    expect(fs.existsSync(path.join(workDir, 'job-retried', 'dispatch-context.json'))).toBe(false);
  });

  it('stops at a refusal', async () => {
    failuresLeft = 0;
    finalAnswer = 409;
    await runAgent('job-refused', () => reports.some((r) => r.answered === 409));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(reports.filter((r) => r.status !== 'in_progress')).toEqual([
      { status: 'successful', answered: 409 },
    ]);
    expect(fs.existsSync(path.join(workDir, 'job-refused', 'dispatch-context.json'))).toBe(false);
  });
});
