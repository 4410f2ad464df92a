import type { ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { ApiClient } from '../../../cli/apiClient';
import { WorkspaceApi } from '../../../cli/apply/workspaceApi';
import { harnessValue } from '../../harness';
import { eventually } from '../../helpers/eventually';
import { exited, freePort, killGroup, spawnFlightdeck } from '../../helpers/processes';
import { startTestStack, type TestStack } from '../../helpers/stack';
import { startTestTemporalServer, type TestTemporalServer } from '../../helpers/temporalFull';

/**
 * Scale-out (docs/operations.md "Scaling"): two API processes and two worker processes on one Temporal server
 * and one PostgreSQL. A version fans out to RESOURCES release targets; 16 pull agents claim through both
 * APIs; midway, one API and one worker die by SIGKILL. Every job must be completed exactly once (and
 * handed out again only after its lease expired), every release must end, and both APIs and both
 * workers must have served work before the kills.
 * With TEMPORAL_FULL=1 it runs on a full Temporal server persisting to PostgreSQL (built from Go
 * modules on first use) instead of the dev server.
 */
const RESOURCES = 96;
const AGENTS = 16;
const WORK_MS = 600;
const LEASE_SECONDS = 10;
const full = process.env.TEMPORAL_FULL === '1';

interface Role {
  name: string;
  child: ChildProcess;
}

interface Handout {
  jobId: string;
  agent: number;
  api: string;
  at: number;
}

const report = (line: string) => process.stderr.write(`[scale-out] ${line}\n`);

describe(`scale-out: 2 APIs and 2 workers on ${full ? 'a full Temporal server on PostgreSQL' : 'the Temporal dev server'}`, () => {
  let stack: TestStack;
  let temporalServer: TestTemporalServer | undefined;
  let temporalAddress: string;
  let connection: Connection;
  const roles: Role[] = [];

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    temporalAddress = harnessValue('temporalAddress');
    if (full) {
      temporalServer = await startTestTemporalServer(report);
      temporalAddress = temporalServer.server.address;
    }
    connection = await Connection.connect({ address: temporalAddress });
  }, 600_000); // a cold full-server build from Go modules takes minutes
  afterAll(async () => {
    for (const role of roles) killGroup(role.child);
    await Promise.all(roles.map((role) => exited(role.child)));
    await connection?.close();
    await temporalServer?.close();
    await stack.close();
  });

  function spawnRole(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Role {
    const child = spawnFlightdeck(stack, args, {
      detached: true,
      // A role's errors in the test's output: an answer of 500 names only its request id.
      stdout: 'inherit',
      env: {
        TEMPORAL_ADDRESS: temporalAddress,
        FLIGHTDECK_WORKFLOW_BUNDLE: harnessValue('workflowBundle'),
        DATABASE_POOL_MAX: '5',
        ...env,
      },
    });
    const role = { name, child };
    roles.push(role);
    return role;
  }

  async function startApi(name: string): Promise<Role & { url: string }> {
    const port = await freePort();
    return Object.assign(spawnRole(name, ['api'], { FLIGHTDECK_PORT: String(port) }), {
      url: `http://127.0.0.1:${port}`,
    });
  }

  /** Distinct poller identities on the task queue, for workflow and activity tasks alike. */
  async function pollers(): Promise<string[]> {
    const identities = await Promise.all(
      [
        proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      ].map(
        async (taskQueueType) =>
          (
            await connection.workflowService.describeTaskQueue({
              namespace: 'default',
              taskQueue: { name: stack.taskQueue },
              taskQueueType,
            })
          ).pollers?.map((poller) => poller.identity ?? '') ?? [],
      ),
    );
    return identities[0]!.filter((identity) => identities[1]!.includes(identity));
  }

  it('completes every job once and ends every release through the kill -9 of one API and one worker', async () => {
    const apis = [await startApi('api-1'), await startApi('api-2')];
    const workers = [spawnRole('worker-1', ['worker']), spawnRole('worker-2', ['worker'])];
    for (const api of apis) {
      await eventually(async () => (await fetch(`${api.url}/readyz`).catch(() => undefined))?.ok === true, {
        what: `${api.name} to be ready`,
        timeoutMs: 90_000,
      });
    }
    await eventually(async () => (await pollers()).length >= 2, {
      what: 'both workers to poll',
      timeoutMs: 90_000,
    });

    const clients = new Map(
      apis.map((api) => [api.url, new ApiClient({ apiUrl: api.url, apiKey: stack.apiKey })]),
    );
    const ws = `/v1/workspaces/${stack.workspaceId}`;
    const via = (url: string) => new WorkspaceApi(clients.get(url)!, stack.workspaceId);

    // The records, written half through each API.
    const [first, second] = apis.map((api) => api.url) as [string, string];
    const agentId = '0193a1c2-0000-7000-8000-00000000c0de';
    await via(first).put(`/job-agents/${agentId}`, {
      name: 'fleet',
      type: 'http-pull',
      config: { leaseSeconds: LEASE_SECONDS },
    });
    const system = await via(second).post<{ id: string }>('/systems', { name: 'Scale' });
    const environment = await via(first).post<{ id: string }>('/environments', {
      name: 'prod',
      resourceSelector: 'resource.metadata["env"] == "prod"',
    });
    const deployment = await via(second).post<{ id: string }>('/deployments', {
      name: 'svc',
      slug: 'svc',
      jobAgents: [{ ref: 'fleet' }],
    });
    await via(first).put(`/systems/${system.id}/environments/${environment.id}`, {});
    await via(second).put(`/systems/${system.id}/deployments/${deployment.id}`, {});
    await Promise.all(
      Array.from({ length: RESOURCES }, (_, n) =>
        via(n % 2 ? first : second).put(`/resources/identifier/node-${n}`, {
          name: `node-${n}`,
          version: 'v1',
          kind: 'service',
          metadata: { env: 'prod' },
        }),
      ),
    );
    const started = Date.now();
    await via(first).post(`/deployments/${deployment.id}/versions`, { tag: '1.0.0' });

    // 16 agents: even ones start on api-1, odd ones on api-2; each moves to the other API when its
    // own stops answering. A claim whose answer is lost is not the agent's: its lease expires.
    const handouts: Handout[] = [];
    const completions: string[] = [];
    const expired: Handout[] = [];
    const dead = new Set<string>();
    let lostAnswers = 0;
    let finished = false;
    const apiFor = (agent: number) => {
      const preferred = apis[agent % 2]!.url;
      return dead.has(preferred) ? apis[(agent + 1) % 2]!.url : preferred;
    };
    /** Sends through the agent's API; a dropped connection marks that API dead (the agent then uses the other). */
    const send = async <T>(agent: number, method: string, route: string, body?: unknown) => {
      const url = apiFor(agent);
      try {
        return { url, ...(await clients.get(url)!.request<T>(method, `${ws}${route}`, body)) };
      } catch (error) {
        if (!/ECONNREFUSED|ECONNRESET|socket hang up/.test(String(error))) throw error;
        dead.add(url);
        throw Object.assign(new Error(`${url} went away`), { lost: true });
      }
    };
    /**
     * Reports success until some API has recorded it. A 409 stale_claim means the claim is gone:
     * either a report whose answer was lost (an API killed after its commit) ended it, and the job
     * is successful, or the lease expired first (the job went back to the queue for another agent):
     * that handout is counted as expired, with what the job says.
     */
    const reportSuccess = async (agent: number, handout: Handout, claimId: string) => {
      let answerLost = false;
      for (;;) {
        try {
          const done = await send<{ code?: string }>(agent, 'PUT', `/jobs/${handout.jobId}/status`, {
            status: 'successful',
            claim_id: claimId,
          });
          if (done.status === 202) return completions.push(handout.jobId);
          if (done.status !== 409 || done.body.code !== 'stale_claim')
            throw new Error(`status answered ${done.status}: ${JSON.stringify(done.body)}`);
          const job = await send<{ status: string; message: string | null }>(
            agent,
            'GET',
            `/jobs/${handout.jobId}`,
          );
          if (answerLost && job.body.status === 'successful') return completions.push(handout.jobId);
          expired.push(handout);
          report(
            `lease of job ${handout.jobId} (agent ${agent}) expired ${Date.now() - handout.at} ms after its claim; the job is ${job.body.status}: ${job.body.message}`,
          );
          return;
        } catch (error) {
          if (!(error as { lost?: boolean }).lost) throw error;
          answerLost = true;
        }
      }
    };
    const runAgent = async (agent: number) => {
      while (!finished) {
        try {
          const page = await send<{ items: { id: string }[] }>(
            agent,
            'GET',
            `/job-agents/${agentId}/jobs?status=queued&limit=16`,
          );
          const items = page.body.items ?? [];
          if (items.length === 0) {
            await new Promise((resolve) => setTimeout(resolve, 200));
            continue;
          }
          const job = items[Math.floor(Math.random() * items.length)]!;
          const claim = await send<{ claim_id: string }>(
            agent,
            'POST',
            `/job-agents/${agentId}/jobs/${job.id}/claim`,
          );
          if (claim.status === 409) continue;
          if (claim.status !== 200) throw new Error(`claim answered ${claim.status}`);
          const handout = { jobId: job.id, agent, api: claim.url, at: Date.now() };
          handouts.push(handout);
          await new Promise((resolve) => setTimeout(resolve, WORK_MS / 2));
          await send(agent, 'POST', `/jobs/${job.id}/heartbeat`, { claim_id: claim.body.claim_id }).catch(
            () => undefined,
          );
          await new Promise((resolve) => setTimeout(resolve, WORK_MS / 2));
          await reportSuccess(agent, handout, claim.body.claim_id);
        } catch (error) {
          if (!(error as { lost?: boolean }).lost) throw error;
          lostAnswers++;
        }
      }
    };
    const agents = Promise.all(Array.from({ length: AGENTS }, (_, agent) => runAgent(agent)));
    const agentsFailed = agents.then(
      () => new Promise<never>(() => undefined),
      (error: unknown) => Promise.reject(error instanceof Error ? error : new Error(String(error))),
    );

    // Midway: a third of the jobs done, both APIs having handed some out.
    await Promise.race([
      agentsFailed,
      eventually(
        async () =>
          handouts.length >= RESOURCES / 3 && apis.every((api) => handouts.some((h) => h.api === api.url)),
        { what: 'a third of the jobs handed out through both APIs', timeoutMs: 120_000 },
      ),
    ]);
    const killedAt = Date.now();
    const [victimApi, victimWorker] = [apis[1]!, workers[1]!];
    killGroup(victimApi.child);
    killGroup(victimWorker.child);
    await Promise.all([exited(victimApi.child), exited(victimWorker.child)]);
    report(
      `killed ${victimApi.name} (pid ${victimApi.child.pid}) and ${victimWorker.name} (pid ${victimWorker.child.pid}) with SIGKILL after ${handouts.length} handouts`,
    );

    const releases = await Promise.race([
      agentsFailed,
      eventually(
        async () => {
          const page = await via(first).get<{ items: { id: string; phase: string }[]; total: number }>(
            '/releases?limit=1000',
          );
          if (page.total === RESOURCES && page.items.every((release) => release.phase === 'succeeded'))
            return page.items;
          const phases = page.items.reduce<Record<string, number>>(
            (counts, release) => ({ ...counts, [release.phase]: (counts[release.phase] ?? 0) + 1 }),
            {},
          );
          throw new Error(`releases ${page.total}: ${JSON.stringify(phases)}; handouts ${handouts.length}`);
        },
        { what: 'every release to succeed', timeoutMs: 180_000 },
      ),
    ]);
    finished = true;
    await agents;
    const seconds = (Date.now() - started) / 1000;

    // Every job exactly once, through the agents' eyes and in the database.
    const jobs = (
      await via(first).get<{ items: { job: { id: string; status: string; releaseId: string } }[] }>(
        '/jobs?limit=1000',
      )
    ).items.map((item) => item.job);
    expect(jobs).toHaveLength(RESOURCES);
    expect(jobs.every((job) => job.status === 'successful')).toBe(true);
    expect(new Set(jobs.map((job) => job.releaseId)).size).toBe(RESOURCES);
    // Each job completed by exactly one agent; a job handed out again only after its lease expired
    // (none, unless the machine stalled an agent's report past LEASE_SECONDS).
    expect(completions).toHaveLength(RESOURCES);
    expect(new Set(completions).size).toBe(RESOURCES);
    expect(handouts).toHaveLength(RESOURCES + expired.length);
    for (const lapsed of expired)
      expect(handouts.some((h) => h.jobId === lapsed.jobId && h.at > lapsed.at)).toBe(true);
    expect(releases).toHaveLength(RESOURCES);

    // Who served what before the kills: claims per API, and workflow and activity tasks per worker
    // (Temporal records each task's poller identity, `pid@host`, in the workflow histories).
    const client = new Client({ connection, namespace: 'default' });
    const tasksBeforeKill = new Map<string, number>();
    const tasksInAll = new Map<string, number>();
    for (const release of releases) {
      const history = await client.workflow.getHandle(`release/${release.id}`).fetchHistory();
      for (const event of history.events ?? []) {
        const identity =
          event.workflowTaskStartedEventAttributes?.identity ??
          event.activityTaskStartedEventAttributes?.identity;
        if (!identity) continue;
        const pid = identity.split('@')[0]!;
        tasksInAll.set(pid, (tasksInAll.get(pid) ?? 0) + 1);
        if (Number(String(event.eventTime?.seconds ?? 0)) * 1000 < killedAt)
          tasksBeforeKill.set(pid, (tasksBeforeKill.get(pid) ?? 0) + 1);
      }
    }
    for (const api of apis) {
      const served = handouts.filter((handout) => handout.api === api.url);
      report(
        `${api.name} (pid ${api.child.pid}) handed out ${served.filter((handout) => handout.at < killedAt).length} jobs before the kill, ${served.length} in all`,
      );
    }
    for (const worker of workers) {
      const pid = String(worker.child.pid);
      report(
        `${worker.name} (pid ${pid}) ran ${tasksBeforeKill.get(pid) ?? 0} release workflow and activity tasks before the kill, ${tasksInAll.get(pid) ?? 0} in all`,
      );
    }
    report(
      `${RESOURCES} jobs completed once each (${handouts.length} handouts, ${expired.length} leases expired) and ${RESOURCES} releases succeeded in ${seconds.toFixed(1)} s; ${lostAnswers} answers lost with the killed API`,
    );

    for (const api of apis)
      expect(handouts.some((handout) => handout.api === api.url && handout.at < killedAt)).toBe(true);
    for (const worker of workers)
      expect(tasksBeforeKill.get(String(worker.child.pid)) ?? 0).toBeGreaterThan(0);
    for (const client of clients.values()) client.close();
  }, 420_000);
});
