import {
  count,
  inParallel,
  percentile,
  queuedJobs,
  round,
  waitFor,
  type workspaceApi,
  type FlightdeckStack,
  type Query,
} from './environment';
import { ApiClient } from '../cli/apiClient';
import { newId } from '../db/ids';

/**
 * Lanes of the benchmarks on `flightdeck start` (bench/pull.ts, bench/trailing.ts): an environment
 * over resources of its own, deployments on them, and the figures of building one.
 */

export type Call = ReturnType<typeof workspaceApi>;
export type Figures = { [name: string]: number | Figures };

/** A figure's value in every run, and their median. */
export interface Repeated {
  median: number;
  runs: number[];
}

export type Summary = { [name: string]: Repeated | Summary };

/** Each figure of the runs: its value in every run and their median. */
export function summarize(runs: Figures[]): Summary {
  const summary: Summary = {};
  for (const [name, first] of Object.entries(runs[0]!)) {
    if (typeof first === 'number') {
      const values = runs.map((figures) => figures[name] as number);
      const sorted = [...values].sort((a, b) => a - b);
      summary[name] = { median: sorted[Math.floor((sorted.length - 1) / 2)]!, runs: values };
    } else {
      summary[name] = summarize(runs.map((figures) => figures[name] as Figures));
    }
  }
  return summary;
}

export interface DeploymentSpec {
  name: string;
  /** Targets: the lane's first `size` resources. */
  size: number;
  leaseSeconds: number;
}

export interface LaneDeployment {
  id: string;
  agentId: string;
  size: number;
}

export interface Lane {
  puts: Figures;
  deployments: LaneDeployment[];
  deployment(name: string): LaneDeployment;
}

/**
 * A lane: an environment over resources of its own, deployments on them (each with an http-pull
 * agent of its own), and the resources, PUT through the API by concurrent writers. Each
 * deployment's targets are the lane's first `size` resources; the lane waits until they all exist.
 */
export function laneBuilder(
  stack: FlightdeckStack,
  call: Call,
  query: Query,
  systemId: string,
  writers: number,
) {
  return {
    async create(label: string, resources: number, copies: number, specs?: DeploymentSpec[]): Promise<Lane> {
      const all =
        specs ??
        Array.from({ length: copies }, (_, n) => ({ name: `${n}`, size: resources, leaseSeconds: 300 }));
      const environment = await call('POST', '/environments', {
        name: label,
        resourceSelector: `resource.metadata["lane"] == "${label}"`,
      });
      await call('PUT', `/systems/${systemId}/environments/${environment.id}`);
      const deployments: (LaneDeployment & { name: string })[] = [];
      for (const spec of all) {
        const agentId = newId();
        const name = `${label}-${spec.name}`;
        await call('PUT', `/job-agents/${agentId}`, {
          name,
          type: 'http-pull',
          config: { leaseSeconds: spec.leaseSeconds },
        });
        const deployment = await call('POST', '/deployments', {
          name,
          slug: name,
          resourceSelector: `resource.metadata["lane"] == "${label}" && resource.metadata["${spec.name}"] == "in"`,
          jobAgents: [{ ref: name }],
        });
        await call('PUT', `/systems/${systemId}/deployments/${deployment.id}`);
        deployments.push({ id: deployment.id, agentId, size: spec.size, name: spec.name });
      }
      const latencies: number[] = [];
      const cpu = cpuProfile(stack);
      const started = performance.now();
      await inParallel(resources, writers, async (n) => {
        const membership = Object.fromEntries(all.map((spec) => [spec.name, n < spec.size ? 'in' : 'out']));
        const sent = performance.now();
        await call('PUT', `/resources/identifier/${label}-${n}`, {
          name: `${label}-${n}`,
          version: 'v1',
          kind: 'service',
          metadata: { lane: label, ...membership },
        });
        latencies.push(performance.now() - sent);
      });
      const seconds = (performance.now() - started) / 1000;
      const cpuPerPut = cpu.perOperation(resources);
      latencies.sort((a, b) => a - b);
      for (const deployment of deployments) {
        await waitFor(
          async () =>
            (await count(query, 'SELECT count(*)::int AS n FROM release_target WHERE deployment_id = $1', [
              deployment.id,
            ])) === deployment.size,
          `${deployment.size} release targets of ${label}-${deployment.name}`,
          600_000,
        );
      }
      return {
        puts: {
          putsPerSecond: round(resources / seconds, 1),
          latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
          cpuMsPerPut: cpuPerPut,
        },
        deployments,
        deployment: (name) => deployments.find((deployment) => deployment.name === name)!,
      };
    },
  };
}

/** A version of the deployment; resolves once every target's job is queued, with how long that took. */
export async function fanOut(
  call: Call,
  query: Query,
  deployment: LaneDeployment,
  tag: string,
): Promise<number> {
  const started = performance.now();
  await call('POST', `/deployments/${deployment.id}/versions`, { tag });
  await waitFor(
    async () => (await queuedJobs(query, deployment.agentId)) === deployment.size,
    `${deployment.size} queued jobs`,
    1_800_000,
  );
  return (performance.now() - started) / 1000;
}

/**
 * Where a phase's time goes: from now until `perOperation` is called, the CPU each process of the
 * stack spent, and the benchmark's own (its HTTP clients: the agents' side), in ms per operation;
 * `coresBusy` is all of it over the phase's wall-clock time (the machine's ceiling is its core count).
 */
export function cpuProfile(stack: FlightdeckStack) {
  const read = () => {
    const own = process.cpuUsage();
    return { ...stack.cpuMs(), bench: (own.user + own.system) / 1000 };
  };
  const before = read();
  const started = performance.now();
  return {
    perOperation(operations: number): Figures {
      const after = read();
      const perRole = Object.fromEntries(
        (Object.keys(after) as (keyof typeof after)[]).map((role) => [
          role,
          round((after[role] - before[role]) / operations, 2),
        ]),
      );
      const sum = (reading: typeof after) => Object.values(reading).reduce((all, ms) => all + ms, 0);
      const total = sum(after) - sum(before);
      return {
        ...perRole,
        total: round(total / operations, 2),
        coresBusy: round(total / (performance.now() - started), 2),
      };
    },
  };
}

export interface Claimed {
  id: string;
  claim_id: string;
  claim_expires_at: string;
}

/** Claims every job at once (`claimers` at a time) and never heartbeats: each job's claim expiry, by the database's clock. */
export async function claimAll(
  stack: FlightdeckStack,
  agentId: string,
  jobs: readonly { id: string }[],
  claimers: number,
): Promise<Map<string, number>> {
  const client = new ApiClient({ apiUrl: stack.apiUrl, apiKey: stack.apiKey });
  const expiries = new Map<string, number>();
  try {
    await inParallel(jobs.length, claimers, async (n) => {
      const job = jobs[n]!;
      const res = await client.request<Claimed>(
        'POST',
        `/v1/workspaces/${stack.workspaceId}/job-agents/${agentId}/jobs/${job.id}/claim`,
      );
      if (res.status !== 200) throw new Error(`claim answered ${res.status}`);
      expiries.set(job.id, Date.parse(res.body.claim_expires_at));
    });
  } finally {
    client.close();
  }
  return expiries;
}

/**
 * Once every claimed job is back in the queue: how long after its own claim's expiry each one
 * returned (its `updated_at`), both by the database's clock, and how close together they expired.
 */
export async function reaperLag(
  query: Query,
  agentId: string,
  expiries: Map<string, number>,
  timeoutMs: number,
): Promise<Figures> {
  await waitFor(
    async () => (await queuedJobs(query, agentId)) >= expiries.size,
    `${expiries.size} leases to be reaped`,
    timeoutMs,
  );
  const requeued = await query<{ id: string; at: Date }>(
    `SELECT id, updated_at AS at FROM job WHERE id = ANY($1::uuid[])`,
    [[...expiries.keys()]],
  );
  const lags = requeued.map((job) => job.at.getTime() - expiries.get(job.id)!).sort((a, b) => a - b);
  const times = [...expiries.values()];
  return {
    expirySpreadMs: Math.max(...times) - Math.min(...times),
    lagMs: {
      p50: round(percentile(lags, 50), 1),
      p99: round(percentile(lags, 99), 1),
      max: round(lags.at(-1) ?? 0, 1),
    },
  };
}
