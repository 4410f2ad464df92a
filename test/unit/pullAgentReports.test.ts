import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PullAgent, variablesAsEnvironment } from '../../cli/agent/pullAgent';
import { eventually } from '../helpers/eventually';

/**
 * The reference agent (docs/agents.md "The reference agent") sends a job's result until the server takes it,
 * with backoff over 5xx answers, stops at a refusal (4xx), and removes the job's context file (it holds the
 * job's secrets) once the command has ended. It reports `in_progress` before the context file or a heartbeat
 * exists, runs nothing when that report fails, and the job's variables never replace the agent's process
 * environment. The server here is a stub of the pull endpoints.
 */
describe('reference agent, reports and isolation', () => {
  let server: http.Server;
  let url: string;
  let workDir: string;
  const reports: { status: string; answered: number | 'dropped'; contextFileExisted: boolean }[] = [];
  let failuresLeft = 0;
  let finalAnswer = 202;
  let startAnswer: number | 'drop' = 202;
  let leaseSeconds: number | undefined;
  let variables: Record<string, unknown> = { SECRET: 's3cr3t' };
  let heartbeats = 0;
  let requeues = 0;
  let queued: string[] = [];
  /** What the agent asked for, in order: `poll`, `claim`, `heartbeat`, `requeue` or `report`. */
  const requests: string[] = [];

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
          requests.push('poll');
          return reply(200, { items: queued.map((id) => ({ id })) });
        }
        const claimed = /\/jobs\/([^/]+)\/claim$/.exec(route);
        if (req.method === 'POST' && claimed) {
          requests.push('claim');
          queued = queued.filter((id) => id !== claimed[1]);
          return reply(200, {
            id: claimed[1],
            releaseId: 'release-1',
            jobAgentConfig: {},
            dispatchContext: { variables },
            ...(leaseSeconds ? { lease_seconds: leaseSeconds, claim_id: 'claim-1' } : {}),
          });
        }
        if (req.method === 'POST' && route.endsWith('/heartbeat')) {
          requests.push('heartbeat');
          heartbeats++;
          return reply(200);
        }
        if (req.method === 'POST' && route.endsWith('/requeue')) {
          requests.push('requeue');
          requeues++;
          return reply(202);
        }
        const reported = /\/jobs\/([^/]+)\/status$/.exec(route);
        if (req.method === 'PUT' && reported) {
          requests.push('report');
          const { status } = JSON.parse(Buffer.concat(chunks).toString()) as { status: string };
          const contextFileExisted = fs.existsSync(path.join(workDir, reported[1]!, 'dispatch-context.json'));
          let answered: number | 'dropped' = 202;
          if (status === 'in_progress') answered = startAnswer === 'drop' ? 'dropped' : startAnswer;
          else {
            answered = failuresLeft > 0 ? 503 : finalAnswer;
            if (failuresLeft > 0) failuresLeft--;
          }
          reports.push({ status, answered, contextFileExisted });
          if (answered === 'dropped') return req.socket.destroy();
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
    failuresLeft = 0;
    finalAnswer = 202;
    startAnswer = 202;
    leaseSeconds = undefined;
    variables = { SECRET: 's3cr3t' };
    heartbeats = 0;
    requeues = 0;
    requests.length = 0;
  });
  afterEach(() => {
    jest.useRealTimers();
    fs.rmSync(workDir, { recursive: true, force: true });
  });

  /** Every timer API but setInterval and clearInterval: the agent's pauses and the server's I/O keep real time. */
  const ALL_BUT_INTERVALS: FakeableAPI[] = [
    'Date',
    'hrtime',
    'nextTick',
    'performance',
    'queueMicrotask',
    'requestAnimationFrame',
    'cancelAnimationFrame',
    'requestIdleCallback',
    'cancelIdleCallback',
    'setImmediate',
    'clearImmediate',
    'setTimeout',
    'clearTimeout',
  ];

  const CHECK_CONTEXT =
    'test -f "$FLIGHTDECK_DISPATCH_CONTEXT" && grep -q s3cr3t "$FLIGHTDECK_DISPATCH_CONTEXT"';

  const runAgent = async (
    jobId: string,
    until: () => boolean,
    { exec = CHECK_CONTEXT, plainVariables }: { exec?: string; plainVariables?: string[] } = {},
  ) => {
    queued = [jobId];
    const agent = new PullAgent({
      apiUrl: url,
      apiKey: 'fdk_test',
      workspaceId: 'ws',
      jobAgentId: 'agent',
      exec,
      plainVariables,
      workDir,
      maxIdleSeconds: 1,
      graceSeconds: 1,
      log: () => undefined,
    });
    const running = agent.run();
    await eventually(() => until() || undefined, { what: 'the agent to get there', timeoutMs: 15_000 });
    await agent.stop();
    await running;
  };
  const contextFile = (jobId: string) => path.join(workDir, jobId, 'dispatch-context.json');
  const statuses = () => reports.map((r) => `${r.status} ${r.answered}`);
  /**
   * The agent polls again only once it is done with the job it claimed (its poll loop awaits the
   * job's run, final report included): from then on nothing more is sent for that job.
   */
  const doneWithTheJob = () => {
    const firstReport = requests.indexOf('report');
    return firstReport >= 0 && requests.indexOf('poll', firstReport) > firstReport;
  };

  it('retries the result over 5xx until it is accepted, and removes the context file', async () => {
    failuresLeft = 3;
    await runAgent('job-retried', () =>
      reports.some((r) => r.status !== 'in_progress' && r.answered === 202),
    );
    expect(statuses()).toEqual([
      'in_progress 202',
      'successful 503',
      'successful 503',
      'successful 503',
      'successful 202',
    ]);
    expect(fs.existsSync(contextFile('job-retried'))).toBe(false);
    // Three backoffs of the agent's own (0.5, 1 and 2 s, ±20 %): up to 4.2 s before the last answer.
  }, 15_000);

  it('stops at a refusal', async () => {
    finalAnswer = 409;
    const results = () => reports.filter((r) => r.status !== 'in_progress');
    // Done with the job after the refusal; a result sent again is a failure to show, not to wait out.
    await runAgent('job-refused', () => doneWithTheJob() || results().length > 1);
    expect(results()).toMatchObject([{ status: 'successful', answered: 409 }]);
    expect(fs.existsSync(contextFile('job-refused'))).toBe(false);
  });

  it('reports in_progress before it writes the context file, then heartbeats', async () => {
    leaseSeconds = 0.3;
    await runAgent('job-ordered', () => reports.some((r) => r.status === 'successful'), {
      exec: `${CHECK_CONTEXT} && sleep 0.5`,
    });
    expect(reports).toMatchObject([
      { status: 'in_progress', answered: 202, contextFileExisted: false },
      { status: 'successful', answered: 202, contextFileExisted: false },
    ]);
    expect(heartbeats).toBeGreaterThan(0);
  });

  it.each([
    ['its connection is dropped', 'drop' as const, 1],
    ['the server answers 503', 503, 1],
    ['the claim is gone (409)', 409, 0],
  ])(
    'runs nothing when the in_progress report fails (%s): no context file, no heartbeat, given back unless refused',
    async (_, answer, givenBack) => {
      startAnswer = answer;
      leaseSeconds = 0.3;
      // Heartbeats run on an interval (a third of the lease): faked, every one the agent starts and
      // does not clear is counted, so a heartbeat left running shows without waiting for it to beat.
      jest.useFakeTimers({ doNotFake: ALL_BUT_INTERVALS });
      const jobId = `job-unstarted-${String(answer)}`;
      await runAgent(jobId, doneWithTheJob, { exec: 'touch ran.txt' });
      expect(jest.getTimerCount()).toBe(0);
      expect(heartbeats).toBe(0);
      expect(requeues).toBe(givenBack);
      expect(statuses()).toEqual([`in_progress ${answer === 'drop' ? 'dropped' : answer}`]);
      expect(fs.existsSync(contextFile(jobId))).toBe(false);
      expect(fs.existsSync(path.join(workDir, jobId, 'ran.txt'))).toBe(false);
    },
  );

  it('never lets a variable replace the agent process environment', async () => {
    variables = {
      SECRET: 's3cr3t',
      REGION: 'eu-1',
      PATH: '/nonexistent/evil',
      LD_PRELOAD: '/nonexistent/evil.so',
      BASH_ENV: '/nonexistent/evil.sh',
      NODE_OPTIONS: '--require /nonexistent/evil.js',
      'app-replicas': 3,
    };
    const exec =
      'printf "%s|%s|%s|%s|%s|%s|%s" "$FLIGHTDECK_VAR_REGION" "$REGION" "$PATH" "${LD_PRELOAD-unset}" ' +
      '"${BASH_ENV-unset}" "${NODE_OPTIONS-unset}" "$FLIGHTDECK_VAR_app_replicas" > env.txt; ' +
      'printf "%s|%s" "$FLIGHTDECK_VAR_PATH" "$FLIGHTDECK_VAR_LD_PRELOAD" > prefixed.txt';
    await runAgent('job-env', () => reports.some((r) => r.status === 'successful'), {
      exec,
      plainVariables: ['REGION'],
    });
    const read = (file: string) => fs.readFileSync(path.join(workDir, 'job-env', file), 'utf8');
    expect(read('env.txt')).toBe(
      [
        'eu-1',
        'eu-1',
        process.env.PATH,
        process.env.LD_PRELOAD ?? 'unset',
        process.env.BASH_ENV ?? 'unset',
        process.env.NODE_OPTIONS ?? 'unset',
        '3',
      ].join('|'),
    );
    expect(read('prefixed.txt')).toBe('/nonexistent/evil|/nonexistent/evil.so');
  });

  it('puts every variable under the prefix, and under its own name only when listed', () => {
    expect(
      variablesAsEnvironment({ 'db.host': 'h', PATH: '/x', REGION: 'eu', n: 1, o: { a: 1 } }, [
        'REGION',
        'PATH',
      ]),
    ).toEqual({
      FLIGHTDECK_VAR_db_host: 'h',
      FLIGHTDECK_VAR_PATH: '/x',
      PATH: '/x',
      FLIGHTDECK_VAR_REGION: 'eu',
      REGION: 'eu',
      FLIGHTDECK_VAR_n: '1',
      FLIGHTDECK_VAR_o: '{"a":1}',
    });
    expect(variablesAsEnvironment({ LD_PRELOAD: '/x.so', IFS: '/' })).toEqual({
      FLIGHTDECK_VAR_LD_PRELOAD: '/x.so',
      FLIGHTDECK_VAR_IFS: '/',
    });
  });
});
