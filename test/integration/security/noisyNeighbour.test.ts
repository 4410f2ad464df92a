import type { ChildProcess } from 'node:child_process';
import { BACKGROUND_NICENESS } from '../../../cli/embedded/processes';
import { harnessValue } from '../../harness';
import { eventually } from '../../helpers/eventually';
import { exited, freePort, killGroup, spawnFlightdeck } from '../../helpers/processes';
import { agentKey, pullFixture, type PullFixture } from '../../helpers/pull';
import { createOtherWorkspace, type WorkspaceAccess } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** Filters priced within the budget on ordinary records, dear on the neighbour's large ones. */
const DEAR_FILTERS = [
  'resource.config.items.exists(i, i == "absent")',
  'resource.config.items.exists(i, i.contains("zz") && i.endsWith("q"))',
  'resource.config.items.all(i, i.startsWith("item")) && resource.name.contains("noisy")',
  `cel.bind(parts, "${Array.from({ length: 30 }, (_, i) => `p${i}`).join(',')}".split(","), parts.exists(p, resource.config.items.exists(i, i == p)))`,
];

/** A policy whose Rego takes its evaluation's whole time. */
const SLOW_REGO = `package main

deny contains msg if {
  count([x | some x in numbers.range(1, 20000000); x % 7 == 3]) < 0
  msg := "never"
}
`;

/** Recurrence rules that ran unbounded on the API's event loop: one never starts, one walks from 1990 hourly. */
const NEVER_STARTS = 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31';
const HOURLY_FROM_1990 = 'DTSTART:19900101T000000Z\nRRULE:FREQ=HOURLY';

/** How long B's agents work before A starts: what B's latency is compared with is its steady state. */
const WARM_UP_MS = 3_000;

/** What an agent waits between its requests: heartbeats at a fraction of the lease, polls at an interval. */
const AGENT_PAUSE_MS = 100;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
};

/**
 * Workspace A runs its most expensive accepted CEL queries, saved selectors, Rego policies and
 * recurrence rules, all at once, while workspace B's agents poll, claim, heartbeat and report. B's
 * requests stay fast (p99 ≤ 100 ms), A gets answers (4xx when over budget), never a stall, and
 * nobody gets a 5xx. The API and the worker run as their own processes, the worker at a lower CPU
 * priority, as `flightdeck start` runs them; the test only drives their clients.
 */
describe('a noisy neighbour', () => {
  let stack: TestStack;
  const processes: ChildProcess[] = [];
  let apiUrl: string;
  let noisy: WorkspaceAccess;
  let quiet: PullFixture;
  let quietKey: string;

  const call = async (
    method: string,
    path: string,
    key: string,
    body?: object,
  ): Promise<{ status: number; ms: number; body: unknown }> => {
    const started = performance.now();
    const res = await fetch(`${apiUrl}/v1${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, ms: performance.now() - started, body: text ? JSON.parse(text) : undefined };
  };

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    const role = (args: string[], env: NodeJS.ProcessEnv = {}, niceness?: number) =>
      spawnFlightdeck(stack, args, {
        detached: true,
        env: { FLIGHTDECK_WORKFLOW_BUNDLE: harnessValue('workflowBundle'), ...env },
        ...(niceness === undefined ? {} : { niceness }),
      });
    processes.push(
      role(['worker'], {}, BACKGROUND_NICENESS),
      role(['api'], { FLIGHTDECK_PORT: String(port) }),
    );
    await eventually(async () => (await fetch(`${apiUrl}/readyz`).catch(() => undefined))?.ok === true, {
      what: 'the API process to be ready',
      timeoutMs: 90_000,
    });
    quiet = await pullFixture(stack, 'quiet', { resources: 40, config: { leaseSeconds: 60 } });
    quietKey = await agentKey(stack, quiet.agentId);
    noisy = await createOtherWorkspace(stack, 'Noisy');
    const items = Array.from({ length: 20_000 }, (_, i) => `item-${i}`);
    const key = noisy.auth['x-api-key'];
    for (let n = 0; n < 24; n++) {
      const res = await call('put', `/workspaces/${noisy.id}/resources/identifier/noisy-${n}`, key, {
        name: `noisy-${n}`,
        version: 'v1',
        kind: 'service',
        metadata: { env: 'prod' },
        config: { items },
      });
      expect(res.status).toBe(202);
    }
    const system = await call('post', `/workspaces/${noisy.id}/systems`, key, { name: 'Noisy' });
    const systemId = (system.body as { id: string }).id;
    const env = await call('post', `/workspaces/${noisy.id}/environments`, key, {
      name: 'prod',
      resourceSelector: 'resource.metadata["env"] == "prod"',
    });
    await call(
      'put',
      `/workspaces/${noisy.id}/systems/${systemId}/environments/${(env.body as { id: string }).id}`,
      key,
    );
    const windows = await call('post', `/workspaces/${noisy.id}/policies`, key, {
      name: 'windows from 1990',
      selector: 'true',
      rules: [{ deploymentWindow: { rrule: HOURLY_FROM_1990, durationMinutes: 30, allowWindow: false } }],
    });
    expect(windows.status).toBeLessThan(300);
    const deployment = await call('post', `/workspaces/${noisy.id}/deployments`, key, {
      name: 'noisy',
      slug: 'noisy',
    });
    await call(
      'put',
      `/workspaces/${noisy.id}/systems/${systemId}/deployments/${(deployment.body as { id: string }).id}`,
      key,
    );
  }, 120_000);
  afterAll(async () => {
    for (const child of processes) killGroup(child, 'SIGTERM');
    await Promise.all(processes.map(exited));
    await stack?.close();
  });

  it("keeps B's agents fast while A runs its dearest queries, selectors and policies", async () => {
    const key = noisy.auth['x-api-key'];
    const ws = `/workspaces/${noisy.id}`;
    const noisyAnswers: { what: string; status: number; ms: number }[] = [];
    const noise = async (what: string, request: () => ReturnType<typeof call>) => {
      const res = await request();
      noisyAnswers.push({ what, status: res.status, ms: res.ms });
    };
    const noisyRounds = async (round: number) => {
      await Promise.all([
        ...DEAR_FILTERS.map((cel) =>
          noise('cel filter', () =>
            call('get', `${ws}/resources?limit=10&cel=${encodeURIComponent(cel)}`, key),
          ),
        ),
        noise('dry run', () =>
          call('post', `${ws}/policies/dry-run`, key, {
            name: 'dear',
            selector: `resource.config.items.exists(i, i.endsWith("${round}q"))`,
            rules: [{ versionSelector: { selector: 'version.tag.contains("x")' } }],
          }),
        ),
        noise('saved selector', () =>
          call('post', `${ws}/environments`, key, {
            name: `dear-${round}`,
            resourceSelector: `resource.config.items.exists(i, i == "item-${round}-absent")`,
          }),
        ),
        noise('never-starting freeze', () =>
          call('post', `${ws}/holds`, key, {
            selector: 'true',
            effect: 'block',
            reason: `freeze ${round}`,
            schedule: { rrule: NEVER_STARTS, durationSeconds: 3600, timeZone: 'UTC' },
          }),
        ),
        noise('explain under an hourly window from 1990', async () => {
          const targets = await call('get', `${ws}/release-targets?limit=1`, key);
          const target = (targets.body as { items: { key: string }[] }).items[0]!;
          return call('get', `${ws}/release-targets/${target.key}/explain`, key);
        }),
        noise('rego', () =>
          call('post', `${ws}/policies`, key, {
            name: `slow-${round}`,
            selector: 'true',
            rules: [{ planValidationOpa: { name: 'slow', rego: SLOW_REGO } }],
          }),
        ),
      ]);
    };

    let noisyDone = false;
    let noisyStarted = false;
    const quietLatencies: number[] = [];
    const quietStatuses: number[] = [];
    const quietCall = async (method: string, path: string, body?: object) => {
      const res = await call(method, path, quietKey, body);
      quietStatuses.push(res.status);
      if (noisyStarted) quietLatencies.push(res.ms);
      return res;
    };
    const agent = async () => {
      const qws = `/workspaces/${stack.workspaceId}`;
      while (!noisyDone) {
        const polled = await quietCall(
          'get',
          `${qws}/job-agents/${quiet.agentId}/jobs?status=queued&limit=5`,
        );
        const items = (polled.body as { items: { id: string }[] }).items;
        const job = items[Math.floor(Math.random() * items.length)];
        if (!job) {
          await pause(AGENT_PAUSE_MS);
          continue;
        }
        const claimed = await quietCall('post', `${qws}/job-agents/${quiet.agentId}/jobs/${job.id}/claim`);
        if (claimed.status !== 200) continue;
        const claimId = (claimed.body as { claim_id: string }).claim_id;
        for (let beat = 0; beat < 3; beat++) {
          await pause(AGENT_PAUSE_MS);
          await quietCall('post', `${qws}/jobs/${job.id}/heartbeat`, { claim_id: claimId });
        }
        await quietCall('put', `${qws}/jobs/${job.id}/status`, { status: 'successful', claim_id: claimId });
        await pause(AGENT_PAUSE_MS);
      }
    };

    const agents = Array.from({ length: 8 }, () => agent());
    await pause(WARM_UP_MS);
    noisyStarted = true;
    for (let round = 0; round < 3; round++) await noisyRounds(round);
    noisyDone = true;
    await Promise.all(agents);

    // B: served throughout, fast, never refused for A's sake.
    expect(quietLatencies.length).toBeGreaterThan(100);
    expect(quietStatuses.filter((status) => status >= 500)).toEqual([]);
    expect(quietStatuses.filter((status) => ![200, 202, 409].includes(status))).toEqual([]);
    const p99 = quantile(quietLatencies, 0.99);
    process.stderr.write(
      `[noisy neighbour] B: ${quietLatencies.length} requests, p50 ${quantile(quietLatencies, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; ` +
        `A: ${noisyAnswers.map((a) => `${a.what} ${a.status} ${Math.round(a.ms)} ms`).join(', ')}\n`,
    );
    expect(p99).toBeLessThanOrEqual(100);

    // A: answered, with a refusal where its work was over budget; never a 5xx.
    expect(noisyAnswers.filter((answer) => answer.status >= 500)).toEqual([]);
    expect(noisyAnswers.some((answer) => answer.status === 422)).toBe(true);
    expect(
      noisyAnswers.filter((answer) => answer.what === 'rego').every((answer) => answer.status === 400),
    ).toBe(true);
    // Recurrence rules: the one that never starts is refused, explain answers with the hourly window.
    const answersTo = (what: string) => noisyAnswers.filter((answer) => answer.what === what);
    expect(answersTo('never-starting freeze').map((answer) => answer.status)).toEqual([400, 400, 400]);
    // A's deployment has no ready version: explain answers 404 at once. The hourly window from 1990
    // is read at the policy's write (accepted above) and by the freeze's and fuzz tests' evaluations.
    expect(answersTo('explain under an hourly window from 1990').map((answer) => answer.status)).toEqual([
      404, 404, 404,
    ]);
  }, 180_000);
});
