import type { EntityManager } from '@mikro-orm/postgresql';
import { Client } from 'pg';
import pino from 'pino';
import { createApp } from '../api/app';
import { storeFactory } from '../application';
import { listen } from '../api/server';
import { migrate, openDatabase, pingDatabase } from '../db/database';
import { SecretBox } from '../db/secrets';
import { ApiKeyStore } from '../application/apiKeys';
import { WorkspaceStore } from '../application/workspaces';
import { percentile, round } from './environment';

/**
 * CEL-filtered resource lists at the size of a large inventory (docs/api.md "Records, selectors and release
 * targets", selectors): BENCH_FILTER_RESOURCES (100,000) resources in one workspace, each with `env` (one of
 * 10), `team` (one of 13) and `zone` (one of 3) metadata and one of 5 kinds, written in one statement.
 * Measured over HTTP, one request at a time after two warm-ups, BENCH_FILTER_REQUESTS (20) each: the first
 * page (50) of a metadata-equality filter, which runs as SQL (10,000 matches, counted exactly), of a kind and
 * metadata filter, of an `endsWith` (SQL without an index), and, for comparison, of a filter CEL judges
 * record by record (its first 10,000).
 * Goal: the metadata filter's median ≤ 50 ms.
 */
const RESOURCES = Number(process.env.BENCH_FILTER_RESOURCES ?? 100_000);
const REQUESTS = Number(process.env.BENCH_FILTER_REQUESTS ?? 20);
/** The record-by-record filter reads 10,000 records a request: a few runs say enough. */
const SCANNED_REQUESTS = 3;

const SEED = `
  INSERT INTO resource (id, workspace_id, identifier, name, version, kind, config, metadata, created_at)
  SELECT gen_random_uuid(), $1, 'node-' || n, 'node-' || n, 'v1', 'k' || (n % 5),
         jsonb_build_object('region', 'region-' || (n % 7), 'size', CASE WHEN n % 3 = 0 THEN 'large' ELSE 'small' END),
         jsonb_build_object('env', 'e' || (n % 10), 'team', 'team-' || (n % 13), 'zone', 'zone-' || (n % 3)),
         now() + n * interval '1 microsecond'
    FROM generate_series(1, $2::int) AS n`;

type Figures = { medianMs: number; p99Ms: number; totalIsExact: boolean } & (
  { total?: number } | { totalAtLeast?: number }
);

/** Latencies of the first page of `cel`, in ms, one request at a time after two warm-ups. */
async function measure(base: string, key: string, cel: string, requests: number): Promise<Figures> {
  const url = `${base}?limit=50&cel=${encodeURIComponent(cel)}`;
  const latencies: number[] = [];
  let page: { total?: number; totalAtLeast?: number; totalIsExact: boolean } = { totalIsExact: false };
  for (let i = 0; i < requests + 2; i++) {
    const t0 = performance.now();
    const response = await fetch(url, { headers: { 'x-api-key': key } });
    const body = (await response.json()) as typeof page;
    if (response.status !== 200)
      throw new Error(`${cel} answered ${response.status}: ${JSON.stringify(body)}`);
    if (i >= 2) latencies.push(performance.now() - t0);
    page = body;
  }
  latencies.sort((a, b) => a - b);
  return {
    medianMs: round(percentile(latencies, 50), 1),
    p99Ms: round(percentile(latencies, 99), 1),
    ...(page.total === undefined ? { totalAtLeast: page.totalAtLeast } : { total: page.total }),
    totalIsExact: page.totalIsExact,
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = `flightdeck_bench_filtered_lists_${Date.now().toString(36)}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const orm = await openDatabase({ url: url.toString(), poolMax: 10 });
  try {
    await migrate(orm);
    const em = orm.em.fork() as EntityManager;
    const workspace = await new WorkspaceStore(em).create({ name: 'Inventory' });
    const { key } = await new ApiKeyStore(em).create({ workspaceId: workspace.id, name: 'bench' });
    const seeding = performance.now();
    const client = new Client({ connectionString: url.toString() });
    await client.connect();
    await client.query(SEED, [workspace.id, RESOURCES]);
    await client.query('VACUUM ANALYZE resource');
    await client.end();
    const seedSeconds = round((performance.now() - seeding) / 1000, 1);

    const { app } = createApp({
      stores: storeFactory(orm, {
        secrets: SecretBox.fromString(SecretBox.generateKey()),
        rego: {
          session: () => {
            throw new Error('the filtered lists bench writes no policies');
          },
        },
      }),
      orm,
      logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
      bodyLimit: '1mb',
      version: 'bench',
      transport: { trustedProxies: [], allowInsecurePull: false },
      readiness: { postgres: () => pingDatabase(orm) },
    });
    const server = await listen(app, '127.0.0.1', 0);
    try {
      const resources = `${server.url}/v1/workspaces/${workspace.id}/resources`;
      return {
        resources: RESOURCES,
        seedSeconds,
        requests: REQUESTS,
        firstPage: {
          metadataEquality: await measure(resources, key, 'resource.metadata["env"] == "e3"', REQUESTS),
          kindAndMetadata: await measure(
            resources,
            key,
            'resource.kind == "k2" && resource.metadata.team in ["team-1", "team-2"]',
            REQUESTS,
          ),
          endsWithInSql: await measure(resources, key, 'resource.metadata["env"].endsWith("3")', REQUESTS),
          judgedByCel: await measure(
            resources,
            key,
            'size(resource.metadata["env"]) == 2 && resource.metadata["env"].endsWith("3")',
            SCANNED_REQUESTS,
          ),
        },
        goal: 'metadata-equality first page median ≤ 50 ms',
      };
    } finally {
      await server.close();
    }
  } finally {
    await orm.close();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
  }
}
