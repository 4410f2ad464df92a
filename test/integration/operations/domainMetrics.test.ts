import fs from 'node:fs';
import path from 'node:path';
import supertest from 'supertest';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { pullFixture } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** A scrape as sample name + labels → value. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** A scrape of the stack's metrics listener. */
async function scrapeOf(stack: TestStack) {
  const res = await supertest(stack.app.metricsApp.callback()).get('/metrics').expect(200);
  return { text: res.text as string, samples: parse(res.text as string) };
}

const value = (samples: Map<string, number>, name: string) => samples.get(name) ?? 0;

/** A label that tells workspaces apart: a workspace id or a job agent's name. */
const TENANT_LABEL = /\b(workspace|agent)="/;

/**
 * Domain metrics on /metrics (docs/metrics.md), moving with the orchestration they describe. Without
 * FLIGHTDECK_METRICS_TENANT_LABELS they name no workspace and no agent
 * (docs/security.md "Metrics exposure").
 */
describe('domain metrics', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ temporalSdkMetrics: true });
  });
  afterAll(() => stack.close());

  const scrape = () => scrapeOf(stack);

  it('counts queue depth, claims, heartbeats and lease expiries as jobs are queued, claimed and reaped', async () => {
    const before = (await scrape()).samples;
    const fixture = await pullFixture(stack, 'metered', { config: { leaseSeconds: 5 } });
    const job = fixture.jobs[0]!;

    const { text, samples: queued } = await scrape();
    expect(text).not.toMatch(TENANT_LABEL);
    expect(text).not.toContain('metered');
    expect(text).not.toContain(stack.workspaceId);
    expect(value(queued, 'flightdeck_job_queue_depth')).toBe(1);
    expect(queued.get('flightdeck_job_queue_oldest_seconds')).toBeGreaterThanOrEqual(0);
    expect(value(queued, 'flightdeck_jobs{status="queued"}')).toBe(1);
    expect(value(queued, 'flightdeck_releases{phase="running"}')).toBeGreaterThanOrEqual(1);
    expect(value(queued, 'flightdeck_version_fanout_seconds_count')).toBeGreaterThan(
      value(before, 'flightdeck_version_fanout_seconds_count'),
    );

    const ws = `/v1/workspaces/${stack.workspaceId}`;
    const claim = await stack.http
      .post(`${ws}/job-agents/${fixture.agentId}/jobs/${job.id}/claim`)
      .set(stack.auth)
      .expect(200);
    await stack.http
      .post(`${ws}/jobs/${job.id}/heartbeat`)
      .set(stack.auth)
      .send({ claim_id: claim.body.claim_id })
      .expect(200);
    const { text: claimedText, samples: claimed } = await scrape();
    expect(claimedText).not.toMatch(TENANT_LABEL);
    expect(value(claimed, 'flightdeck_job_queue_depth')).toBe(0);
    expect(value(claimed, 'flightdeck_jobs{status="in_progress"}')).toBe(1);
    expect(value(claimed, 'flightdeck_job_claims_total')).toBe(
      value(before, 'flightdeck_job_claims_total') + 1,
    );
    expect(value(claimed, 'flightdeck_job_heartbeats_total')).toBe(
      value(before, 'flightdeck_job_heartbeats_total') + 1,
    );

    // No more heartbeats: the lease expires and the reaper puts the job back in the queue. The
    // expiry is counted when it happens, the queue read again at most every few seconds.
    const reaped = await eventually(
      async () => {
        const { samples } = await scrape();
        return value(samples, 'flightdeck_lease_expiries_total') >
          value(before, 'flightdeck_lease_expiries_total') &&
          value(samples, 'flightdeck_job_queue_depth') === 1
          ? samples
          : undefined;
      },
      { what: 'the lease to expire and the job to be queued again', timeoutMs: 20_000 },
    );
    expect(value(reaped, 'flightdeck_job_queue_depth')).toBe(1);
    expect(value(reaped, 'flightdeck_lease_reaper_lag_seconds_count')).toBe(
      value(before, 'flightdeck_lease_reaper_lag_seconds_count') + 1,
    );
    expect(value(reaped, 'flightdeck_lease_reaper_lag_seconds_sum')).toBeLessThan(60);
  }, 60_000);

  it('shows gate waits by rule, the outbox, and the Temporal SDK’s worker metrics', async () => {
    const api = recordsApi(stack);
    const system = await api.system('metered-gates');
    const environment = await api.environment(
      'metered-gates',
      'resource.metadata["pool"] == "gated"',
      system,
    );
    const deployment = await api.deployment('metered-gates', system, { jobAgents: [{ ref: 'metered' }] });
    await api.resource('gated-node', 'service', { pool: 'gated' });
    await api.policy({
      name: 'metered approvals',
      selector: `environment.id == "${environment}"`,
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    await api.version(deployment, '1.0.0');
    await api.releaseWith(
      (r) => r.deploymentId === deployment && r.evaluation?.decision === 'wait',
      'the gated release',
    );
    const { text, samples } = await scrape();
    expect(
      value(samples, 'flightdeck_gate_waits{rule="anyApproval",state="waiting"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(samples.has('flightdeck_outbox_backlog')).toBe(true);
    expect(samples.has('flightdeck_outbox_oldest_seconds')).toBe(true);
    expect(text).toMatch(/^temporal_\w+/m);
  });

  it('serves every metric the Grafana dashboard under deploy/ names', async () => {
    const dashboard = fs.readFileSync(
      path.join(__dirname, '../../../deploy/grafana/flightdeck-dashboard.json'),
      'utf8',
    );
    const named = [...new Set(dashboard.match(/\b(?:flightdeck|temporal)_[a-z_]+\b/g) ?? [])];
    expect(named.length).toBeGreaterThan(10);
    const { text } = await scrape();
    const served = new Set(
      text
        .split('\n')
        .filter((line) => line && !line.startsWith('#'))
        .map((line) => line.split(/[{ ]/)[0]!),
    );
    const missing = named.filter((name) => !served.has(name));
    expect(missing).toEqual([]);
  });
});

describe('domain metrics with FLIGHTDECK_METRICS_TENANT_LABELS', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ metrics: { tenantLabels: true } });
  });
  afterAll(() => stack.close());

  it('labels the queue, the jobs and the claims with the workspace and the agent', async () => {
    const before = (await scrapeOf(stack)).samples;
    const fixture = await pullFixture(stack, 'labelled');
    const tenant = `workspace="${stack.workspaceId}",agent="labelled"`;
    const queued = (await scrapeOf(stack)).samples;
    expect(value(queued, `flightdeck_job_queue_depth{${tenant}}`)).toBe(1);
    expect(value(queued, `flightdeck_jobs{status="queued",${tenant}}`)).toBe(1);
    expect(queued.get(`flightdeck_job_queue_oldest_seconds{${tenant}}`)).toBeGreaterThanOrEqual(0);

    await stack.http
      .post(
        `/v1/workspaces/${stack.workspaceId}/job-agents/${fixture.agentId}/jobs/${fixture.jobs[0]!.id}/claim`,
      )
      .set(stack.auth)
      .expect(200);
    const claimed = (await scrapeOf(stack)).samples;
    expect(value(claimed, `flightdeck_job_claims_total{${tenant}}`)).toBe(
      value(before, `flightdeck_job_claims_total{${tenant}}`) + 1,
    );
    expect(value(claimed, `flightdeck_jobs{status="in_progress",${tenant}}`)).toBe(1);

    // Its success counts in the DORA gauges of its deployment and environment
    // (docs/api.md "Delivery metrics (DORA)").
    await stack.http
      .put(`/v1/workspaces/${stack.workspaceId}/jobs/${fixture.jobs[0]!.id}/status`)
      .set(stack.auth)
      .send({ status: 'successful' })
      .expect(202);
    const dora = `workspace="${stack.workspaceId}",deployment="svc-labelled",environment="env-labelled"`;
    const shipped = await eventually(
      async () => {
        const samples = (await scrapeOf(stack)).samples;
        return samples.get(`flightdeck_dora_deployments{${dora}}`) === 1 ? samples : undefined;
      },
      { what: 'the release to count as a deployment' },
    );
    expect(value(shipped, `flightdeck_dora_failures{${dora}}`)).toBe(0);
    expect(shipped.get(`flightdeck_dora_lead_time_seconds{${dora}}`)).toBeGreaterThan(0);
  });
});
