import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiServer } from '../../../api/server';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { exited, killGroup, spawnFlightdeck } from '../../helpers/processes';
import { agentKey, pullFixture, serveStack, type PullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/behaviour.md "Pull job agents" with the reference agent (`flightdeck agent run`) as a real process: it runs
 * a shell command per job with the variables in its environment (`FLIGHTDECK_VAR_<name>`, and the
 * names given to `--env`) and the dispatch context in a file;
 * a killed agent's lease expires and another agent finishes the job; SIGTERM finishes or gives back.
 */
describe('the reference pull agent', () => {
  let stack: TestStack;
  let server: ApiServer;
  let workDir: string;
  const agents: ChildProcess[] = [];

  beforeAll(async () => {
    stack = await startTestStack();
    server = await serveStack(stack);
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-agent-'));
  });
  afterAll(async () => {
    for (const agent of agents) killGroup(agent);
    await server.close();
    await stack.close();
    fs.rmSync(workDir, { recursive: true, force: true });
  });

  /** Starts `flightdeck agent run` for the fixture's agent with its own key; collects what it prints. */
  async function runAgent(fixture: PullFixture, exec: string, extra: string[] = []) {
    const key = await agentKey(stack, fixture.agentId);
    const child = spawnFlightdeck(
      stack,
      [
        'agent',
        'run',
        ...['--agent', fixture.agentId, '--exec', exec, '--api', server.url, '--key', key],
        ...['--workspace', stack.workspaceId, '--work-dir', workDir, '--max-idle', '1', ...extra],
      ],
      { stdout: 'pipe', detached: true },
    );
    agents.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return { child, output: () => output };
  }

  const jobOf = async (jobId: string) =>
    (await stack.http.get(`/v1/workspaces/${stack.workspaceId}/jobs/${jobId}`).set(stack.auth)).body as {
      status: string;
      message: string | null;
    };
  const waitForStatus = (jobId: string, status: string, timeoutMs = 30_000) =>
    eventually(async () => (await jobOf(jobId)).status === status, {
      what: `job ${jobId} to be ${status}`,
      timeoutMs,
    });
  const claimRows = (jobId: string) =>
    (stack.orm.em.fork() as EntityManager).execute('SELECT 1 FROM job_claim WHERE job_id = ?', [jobId]);

  it('runs a real shell command per job with the variables and the context file, and reports the exit code', async () => {
    const fixture = await pullFixture(stack, 'shell', {
      config: { leaseSeconds: 30 },
      resources: 2,
      variables: { GREETING: 'hello from flightdeck' },
    });
    const script =
      'printf "%s|%s" "$GREETING" "$FLIGHTDECK_VAR_GREETING" > greeting.txt && ' +
      'cp "$FLIGHTDECK_DISPATCH_CONTEXT" context-copy.json && ' +
      'echo "deploying $FLIGHTDECK_VERSION_TAG to $FLIGHTDECK_RESOURCE" && ' +
      'test "$FLIGHTDECK_RESOURCE" != shell-node-1 || { echo "disk full" >&2; exit 3; }';
    const agent = await runAgent(fixture, script, ['--env', 'GREETING']);
    try {
      const byResource = new Map<string, string>();
      for (const job of fixture.jobs) {
        const context = await eventually(
          async () => {
            const done = await jobOf(job.id);
            return ['successful', 'failure'].includes(done.status) ? done : undefined;
          },
          { what: `job ${job.id} to end`, timeoutMs: 30_000 },
        );
        const dir = path.join(workDir, job.id);
        expect(fs.readFileSync(path.join(dir, 'greeting.txt'), 'utf8')).toBe(
          'hello from flightdeck|hello from flightdeck',
        );
        const copied = JSON.parse(fs.readFileSync(path.join(dir, 'context-copy.json'), 'utf8'));
        expect(copied).toMatchObject({
          version: { tag: '1.0.0' },
          variables: { GREETING: 'hello from flightdeck' },
        });
        byResource.set(copied.resource.identifier, `${context.status}: ${context.message}`);
        expect(await claimRows(job.id)).toEqual([]);
      }
      expect(byResource.get('shell-node-0')).toBe('successful: exit code 0');
      expect(byResource.get('shell-node-1')).toMatch(/^failure: exit code 3\n[\s\S]*disk full/);
      expect(agent.output()).toMatch(/claimed job .*: 1\.0\.0 to shell-node-0 in env-shell \(lease 30 s\)/);
      expect(agent.output()).toContain('deploying 1.0.0 to shell-node-0');
    } finally {
      killGroup(agent.child, 'SIGTERM');
      await exited(agent.child);
    }
  }, 90_000);

  it('reports and prints a coloured output with its control characters escaped, so the result is kept', async () => {
    const fixture = await pullFixture(stack, 'colours');
    const job = fixture.jobs[0]!;
    const agent = await runAgent(fixture, "printf '\\033[31mred\\033[0m\\r\\n\\007'; exit 2");
    try {
      await waitForStatus(job.id, 'failure');
      expect((await jobOf(job.id)).message).toBe('exit code 2\n\\u001b[31mred\\u001b[0m\\r\n\\u0007');
      await eventually(() => agent.output().includes(`job ${job.id} failed`), { what: 'the log line' });
      expect(agent.output()).toContain(`[${job.id.slice(-8)}] \\u001b[31mred\\u001b[0m\\r`);
      expect(
        agent
          .output()
          .split('\n')
          .filter((line) => /\p{Cc}/u.test(line)),
      ).toEqual([]);
    } finally {
      killGroup(agent.child, 'SIGTERM');
      await exited(agent.child);
    }
  }, 60_000);

  it('lets the lease of a SIGKILLed agent expire, and another agent finishes the job', async () => {
    const fixture = await pullFixture(stack, 'doomed', { config: { leaseSeconds: 5 } });
    const job = fixture.jobs[0]!;
    // The command outlives its killed agent, as on a machine that lost only the agent process.
    const doomed = await runAgent(fixture, 'sleep 20');
    await waitForStatus(job.id, 'in_progress');
    await eventually(() => doomed.output().includes('claimed job'), { what: 'the claim' });
    killGroup(doomed.child);
    await exited(doomed.child);
    const killedAt = Date.now();

    await waitForStatus(job.id, 'queued', 15_000);
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(await claimRows(job.id)).toEqual([]);

    const rescuer = await runAgent(fixture, 'echo rescued');
    try {
      await waitForStatus(job.id, 'successful');
      expect(rescuer.output()).toContain('rescued');
      await recordsApi(stack).releaseWith(
        (release) => release.id === job.releaseId && release.phase === 'succeeded',
        'the release to succeed',
      );
    } finally {
      killGroup(rescuer.child, 'SIGTERM');
      await exited(rescuer.child);
    }
  }, 90_000);

  it('stops a cancelled job: SIGTERM to its command, a cancelled report, its context file removed', async () => {
    const fixture = await pullFixture(stack, 'cancelled', {
      config: { leaseSeconds: 6, cancelGraceSeconds: 30 },
    });
    const job = fixture.jobs[0]!;
    // The command notes the SIGTERM it gets, then ends as a well-behaved deploy script would.
    const agent = await runAgent(
      fixture,
      "trap 'echo stopping > stopped.txt; exit 143' TERM; sleep 60 & wait",
    );
    try {
      await waitForStatus(job.id, 'in_progress');
      const contextFile = path.join(workDir, job.id, 'dispatch-context.json');
      await eventually(() => fs.existsSync(contextFile), { what: 'the context file' });
      const askedAt = Date.now();
      await stack.http
        .post(`/v1/workspaces/${stack.workspaceId}/releases/${job.releaseId}/cancel`)
        .set(stack.auth)
        .expect(202);
      await waitForStatus(job.id, 'cancelled', 15_000);
      // Stopped by its agent at the next heartbeat (every 2 s), not by the deadline 30 s away.
      expect(Date.now() - askedAt).toBeLessThan(10_000);
      expect((await jobOf(job.id)).message).toBe('cancelled on request: exit code 143');
      expect(fs.readFileSync(path.join(workDir, job.id, 'stopped.txt'), 'utf8')).toBe('stopping\n');
      expect(fs.existsSync(contextFile)).toBe(false);
      expect(await claimRows(job.id)).toEqual([]);
      expect(agent.output()).toContain(`job ${job.id}: cancel requested`);
    } finally {
      killGroup(agent.child, 'SIGTERM');
      await exited(agent.child);
    }
  }, 60_000);

  it('on SIGTERM gives a long job back to the queue after the grace period, or lets a short one finish', async () => {
    const fixture = await pullFixture(stack, 'polite', { config: { leaseSeconds: 30 }, resources: 2 });
    const [first, second] = fixture.jobs;

    const slow = await runAgent(fixture, 'sleep 120', ['--grace', '1']);
    const claimed = await eventually(
      async () => {
        for (const job of [first!, second!]) if ((await jobOf(job.id)).status === 'in_progress') return job;
        return undefined;
      },
      { what: 'a claim' },
    );
    slow.child.kill('SIGTERM');
    await exited(slow.child);
    expect(slow.child.exitCode).toBe(0);
    expect(slow.output()).toContain(`job ${claimed.id} given back to the queue (202)`);
    expect((await jobOf(claimed.id)).status).toBe('queued');
    expect(await claimRows(claimed.id)).toEqual([]);

    const quick = await runAgent(fixture, 'sleep 2 && echo finished', ['--grace', '30']);
    const running = await eventually(
      async () => {
        for (const job of [first!, second!]) if ((await jobOf(job.id)).status === 'in_progress') return job;
        return undefined;
      },
      { what: 'the next claim' },
    );
    quick.child.kill('SIGTERM');
    await exited(quick.child);
    expect(quick.child.exitCode).toBe(0);
    expect((await jobOf(running.id)).status).toBe('successful');
  }, 90_000);

  it('stops with the reason when the server refuses its key, instead of polling forever', async () => {
    const fixture = await pullFixture(stack, 'refused');
    const child = spawnFlightdeck(
      stack,
      [
        'agent',
        'run',
        ...['--agent', fixture.agentId, '--exec', 'true', '--api', server.url, '--key', 'fdk_not-a-key'],
        ...['--workspace', stack.workspaceId, '--work-dir', workDir],
      ],
      { stderr: 'pipe', detached: true },
    );
    agents.push(child);
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    await exited(child);
    expect(child.exitCode).toBe(1);
    expect(errors).toMatch(/the server refused the poll \(401/);
    expect((await jobOf(fixture.jobs[0]!.id)).status).toBe('queued');
  });
});
