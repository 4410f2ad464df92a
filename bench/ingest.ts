import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../cli/embedded/processes';
import { SecretBox } from '../db/secrets';
import { WorkspaceStore } from '../application/workspaces';
import { benchEnvironment, inParallel, percentile, rssMb, round, waitFor, workspaceApi } from './environment';

/**
 * Inventory ingest through the API (`flightdeck api`, run from source in a process of its own so
 * its memory is its own), into a workspace of 4 environments × 4 deployments in one system, every
 * resource a target of 4 pairs:
 * - resource PUTs per second from BENCH_INGEST_WRITERS (8) concurrent writers, BENCH_INGEST_PUTS
 *   (4,000) creations, then as many replacements that move each resource to another environment;
 * - a provider's set of each size of BENCH_INGEST_SETS (10,000 and 100,000) resources, end to end
 *   (request sent to answer received): first the set that creates them, then the same set again
 *   with every resource moved, then half of it (the other half deleted); the API's peak memory.
 * BENCH_INGEST_API_FLAGS: node flags for the API process (`--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
const WRITERS = Number(process.env.BENCH_INGEST_WRITERS ?? 8);
const PUTS = Number(process.env.BENCH_INGEST_PUTS ?? 4_000);
const SETS = (process.env.BENCH_INGEST_SETS ?? '10000,100000').split(',').filter(Boolean).map(Number);
const ENVIRONMENTS = ['prod', 'staging', 'dev', 'qa'];
const KINDS = ['node', 'vm', 'pod', 'db'];

/** A resource as `ctrlc sync` sends it: `pass` moves it to another environment. */
function resource(identifier: string, n: number, pass: number) {
  return {
    identifier,
    name: identifier,
    kind: KINDS[n % KINDS.length]!,
    version: 'v1',
    config: { region: `region-${n % 7}`, size: n % 3 === 0 ? 'large' : 'small' },
    metadata: {
      env: ENVIRONMENTS[(n + pass) % ENVIRONMENTS.length]!,
      team: `team-${n % 13}`,
      zone: `zone-${n % 5}`,
    },
    createdAt: '0001-01-01T00:00:00Z',
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const env = await benchEnvironment('ingest');
  const { workspace, issued } = await new WorkspaceStore(env.orm.em.fork()).createWithKey({ name: 'Ingest' });
  const { key } = issued;
  const port = await freePort();
  const api = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_INGEST_API_FLAGS?.split(' ') ?? []),
      '--import',
      'tsx',
      path.join(__dirname, '..', 'cli', 'main.ts'),
      'api',
    ],
    {
      env: {
        ...process.env,
        MALLOC_ARENA_MAX: '2',
        LOG_LEVEL: 'warn',
        DATABASE_URL: env.databaseUrl,
        TEMPORAL_ADDRESS: env.temporalAddress,
        FLIGHTDECK_PORT: String(port),
        FLIGHTDECK_METRICS_PORT: 'off',
        FLIGHTDECK_SECRET_KEY: SecretBox.generateKey(),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const apiUrl = `http://127.0.0.1:${port}`;
  const call = workspaceApi(apiUrl, workspace.id, key);
  const query = <T>(sql: string, params: unknown[] = []) =>
    env.orm.em.fork().getConnection().execute<T[]>(sql, params);
  const targetCount = async () =>
    (
      await query<{ n: number }>('SELECT count(*)::int AS n FROM release_target WHERE workspace_id = ?', [
        workspace.id,
      ])
    )[0]!.n;
  try {
    await waitFor(async () => (await fetch(`${apiUrl}/readyz`)).ok, 'the API');
    const system = await call('POST', '/systems', { name: 'Fleet' });
    for (const name of ENVIRONMENTS) {
      const { id } = await call('POST', '/environments', {
        name,
        resourceSelector: `resource.metadata["env"] == "${name}"`,
      });
      await call('PUT', `/systems/${system.id}/environments/${id}`);
    }
    for (const kind of KINDS) {
      const { id } = await call('POST', '/deployments', {
        name: kind,
        slug: kind,
        resourceSelector: `resource.kind == "${kind}" || resource.metadata["team"] == "team-1"`,
      });
      await call('PUT', `/systems/${system.id}/deployments/${id}`);
    }

    const round_ = (value: number) => round(value, 1);
    const puts = async (pass: number) => {
      const latencies: number[] = [];
      const started = performance.now();
      await inParallel(PUTS, WRITERS, async (n) => {
        const { identifier: _identifier, createdAt: _createdAt, ...body } = resource(`put-${n}`, n, pass);
        const t0 = performance.now();
        await call('PUT', `/resources/identifier/put-${n}`, body);
        latencies.push(performance.now() - t0);
      });
      const seconds = (performance.now() - started) / 1000;
      latencies.sort((a, b) => a - b);
      return {
        perSecond: round_(PUTS / seconds),
        p50Ms: round_(percentile(latencies, 50)),
        p99Ms: round_(percentile(latencies, 99)),
      };
    };
    const resourcePuts = { creates: await puts(0), moves: await puts(1), targets: await targetCount() };

    const sets: Record<string, unknown> = {};
    for (const size of SETS) {
      const provider = await call('PUT', '/resource-providers', { name: `scanner-${size}` });
      const send = async (resources: object[]) => {
        const body = JSON.stringify({ resources });
        const t0 = performance.now();
        const res = await fetch(
          `${apiUrl}/v1/workspaces/${workspace.id}/resource-providers/${provider.id}/set`,
          {
            method: 'PUT',
            headers: { 'x-api-key': key, 'content-type': 'application/json' },
            body,
          },
        );
        const answer = await res.text();
        if (res.status !== 202) throw new Error(`set answered ${res.status}: ${answer.slice(0, 500)}`);
        return {
          seconds: round((performance.now() - t0) / 1000, 2),
          bodyMb: round(body.length / 2 ** 20, 1),
        };
      };
      const all = (pass: number) =>
        Array.from({ length: size }, (_, n) => resource(`set${size}-${n}`, n, pass));
      const created = await send(all(0));
      const moved = await send(all(1));
      const halved = await send(all(1).slice(0, size / 2));
      sets[String(size)] = { created, moved, halved, targets: await targetCount() };
    }
    return {
      writers: WRITERS,
      resourcePuts,
      providerSets: sets,
      apiPeakRssMb: rssMb(api.pid!, 'VmHWM'),
    };
  } finally {
    await new Promise((resolve) => {
      api.once('exit', resolve);
      api.kill('SIGTERM');
    });
    await env.close();
  }
}
