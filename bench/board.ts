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
 * The rollout board's board.json at the size of a real workspace: BENCH_BOARD_DEPLOYMENTS
 * (52) deployments × BENCH_BOARD_ENVIRONMENTS (55) environments, BENCH_BOARD_RESOURCES (20) resources
 * in each environment and every deployment on each (57,200 release targets), three versions per
 * deployment: the first succeeded everywhere, the second on 95% of the targets (5% failed), the
 * newest succeeded on 60%, running on 10% (an active job each), waiting for an approval on 20% and
 * not released on 10%. The records are written set-based in SQL (no Temporal: the board only reads).
 * Measured over HTTP, one request at a time, BENCH_BOARD_REQUESTS (50) each: the whole board, one
 * system's deployments, one environment, a search, and a deployment's page. Goal: board.json p99
 * ≤ 200 ms (docs/api.md "The rollout board").
 */
const DEPLOYMENTS = Number(process.env.BENCH_BOARD_DEPLOYMENTS ?? 52);
const ENVIRONMENTS = Number(process.env.BENCH_BOARD_ENVIRONMENTS ?? 55);
const RESOURCES = Number(process.env.BENCH_BOARD_RESOURCES ?? 20);
const REQUESTS = Number(process.env.BENCH_BOARD_REQUESTS ?? 50);
const SYSTEMS = 4;

/** The workspace, written in a handful of statements whatever its size. */
const SEED = [
  `INSERT INTO system (id, workspace_id, name, slug)
   SELECT gen_random_uuid(), $1, 'System ' || n, 'system-' || n FROM generate_series(1, ${SYSTEMS}) n`,
  `INSERT INTO environment (id, workspace_id, name)
   SELECT gen_random_uuid(), $1, 'env-' || lpad(n::text, 3, '0') FROM generate_series(1, ${ENVIRONMENTS}) n`,
  `INSERT INTO deployment (id, workspace_id, name, slug)
   SELECT gen_random_uuid(), $1, 'Service ' || n, 'service-' || lpad(n::text, 3, '0')
     FROM generate_series(1, ${DEPLOYMENTS}) n`,
  // Each system holds a quarter of the deployments and every environment.
  `INSERT INTO system_deployment (system_id, deployment_id, workspace_id)
   SELECT s.id, d.id, $1 FROM deployment d JOIN system s ON s.workspace_id = $1
      AND s.slug = 'system-' || (1 + (substring(d.slug FROM 9)::int % ${SYSTEMS}))
    WHERE d.workspace_id = $1`,
  `INSERT INTO system_environment (system_id, environment_id, workspace_id)
   SELECT s.id, e.id, $1 FROM system s, environment e WHERE s.workspace_id = $1 AND e.workspace_id = $1`,
  `INSERT INTO resource (id, workspace_id, identifier, name, version, kind, metadata)
   SELECT gen_random_uuid(), $1, e.name || '-' || n, e.name || '-' || n, 'v1', 'service', jsonb_build_object('env', e.name)
     FROM environment e, generate_series(1, ${RESOURCES}) n WHERE e.workspace_id = $1`,
  `INSERT INTO release_target (resource_id, environment_id, deployment_id, workspace_id)
   SELECT r.id, e.id, d.id, $1 FROM resource r JOIN environment e ON e.workspace_id = $1 AND e.name = r.metadata->>'env'
     JOIN deployment d ON d.workspace_id = $1 WHERE r.workspace_id = $1`,
  `INSERT INTO deployment_version (id, workspace_id, deployment_id, tag, status, created_at, rollout_status,
                                   rollout_release_count)
   SELECT gen_random_uuid(), $1, d.id, '1.' || v || '.0', 'ready', now() - (4 - v) * interval '1 hour', 'completed',
          ${ENVIRONMENTS * RESOURCES}
     FROM deployment d, generate_series(1, 3) v WHERE d.workspace_id = $1`,
  `INSERT INTO job_agent (id, workspace_id, name, type) VALUES (gen_random_uuid(), $1, 'runner', 'http-pull')`,
  // Each target's bucket (0–99) decides what happened to it.
  `CREATE TEMPORARY TABLE bench_target AS
   SELECT t.*, abs(hashtext(t.resource_id::text || t.deployment_id::text)) % 100 AS bucket
     FROM release_target t WHERE t.workspace_id = $1`,
  `INSERT INTO release (id, workspace_id, deployment_id, environment_id, resource_id, version_id, phase, phase_reason,
                        created_at, completed_at)
   SELECT gen_random_uuid(), $1, t.deployment_id, t.environment_id, t.resource_id, v.id, p.phase,
          CASE p.phase WHEN 'pending' THEN 'waiting: 0 of 1 approvals' END, v.created_at,
          CASE WHEN p.phase IN ('succeeded', 'failed') THEN v.created_at + interval '10 minutes' END
     FROM bench_target t JOIN deployment_version v ON v.deployment_id = t.deployment_id,
          LATERAL (SELECT CASE
                     WHEN v.tag = '1.1.0' THEN 'succeeded'
                     WHEN v.tag = '1.2.0' THEN CASE WHEN t.bucket < 5 THEN 'failed' ELSE 'succeeded' END
                     WHEN t.bucket < 60 THEN 'succeeded' WHEN t.bucket < 70 THEN 'running'
                     WHEN t.bucket < 90 THEN 'pending' END AS phase) p
    WHERE p.phase IS NOT NULL`,
  `INSERT INTO job (id, workspace_id, release_id, deployment_id, environment_id, resource_id, job_agent_id, agent_type,
                    agent_entry, status, created_at, completed_at)
   SELECT gen_random_uuid(), $1, r.id, r.deployment_id, r.environment_id, r.resource_id, a.id, 'http-pull', 0,
          CASE r.phase WHEN 'succeeded' THEN 'successful' WHEN 'failed' THEN 'failure' ELSE 'in_progress' END,
          r.created_at, r.completed_at
     FROM release r JOIN job_agent a ON a.workspace_id = $1
    WHERE r.workspace_id = $1 AND r.phase IN ('succeeded', 'failed', 'running')`,
  `INSERT INTO release_target_state (resource_id, environment_id, deployment_id, workspace_id, current_release_id,
                                     active_release_id)
   SELECT t.resource_id, t.environment_id, t.deployment_id, $1,
          (SELECT r.id FROM release r JOIN deployment_version v ON v.id = r.version_id
            WHERE r.resource_id = t.resource_id AND r.environment_id = t.environment_id
              AND r.deployment_id = t.deployment_id AND r.phase = 'succeeded'
            ORDER BY v.created_at DESC LIMIT 1),
          (SELECT r.id FROM release r
            WHERE r.resource_id = t.resource_id AND r.environment_id = t.environment_id
              AND r.deployment_id = t.deployment_id AND r.phase = 'running')
     FROM bench_target t
   ON CONFLICT (resource_id, environment_id, deployment_id) DO UPDATE
      SET current_release_id = EXCLUDED.current_release_id, active_release_id = EXCLUDED.active_release_id`,
  `UPDATE release_target_state s SET current_version_id = r.version_id FROM release r WHERE r.id = s.current_release_id`,
  `DROP TABLE bench_target`,
  `ANALYZE`,
];

/** Latencies of one request, in ms, one at a time after two warm-ups. */
async function measure(
  url: string,
  cookie: string,
): Promise<{ p50Ms: number; p99Ms: number; bytes: number }> {
  const latencies: number[] = [];
  let bytes = 0;
  for (let i = 0; i < REQUESTS + 2; i++) {
    const t0 = performance.now();
    const response = await fetch(url, { headers: { cookie } });
    const body = await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
    if (i >= 2) latencies.push(performance.now() - t0);
    bytes = body.byteLength;
  }
  latencies.sort((a, b) => a - b);
  return { p50Ms: round(percentile(latencies, 50), 1), p99Ms: round(percentile(latencies, 99), 1), bytes };
}

export async function run(): Promise<Record<string, unknown>> {
  const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = `flightdeck_bench_board_${Date.now().toString(36)}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const orm = await openDatabase({ url: url.toString(), poolMax: 10 });
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
  try {
    await migrate(orm);
    const em = orm.em.fork() as EntityManager;
    const workspace = await new WorkspaceStore(em).create({ name: 'Board' });
    const { key } = await new ApiKeyStore(em).create({ workspaceId: workspace.id, name: 'board' });
    const seeding = performance.now();
    const client = new Client({ connectionString: url.toString() });
    await client.connect();
    for (const statement of SEED)
      await client.query(statement, statement.includes('$1') ? [workspace.id] : []);
    const counts = (
      await client.query<Record<string, number>>(
        `SELECT (SELECT count(*)::int FROM release_target) AS "releaseTargets",
                (SELECT count(*)::int FROM release) AS releases, (SELECT count(*)::int FROM job) AS jobs`,
      )
    ).rows[0];
    await client.end();
    const seedSeconds = round((performance.now() - seeding) / 1000, 1);

    const { app } = createApp({
      stores: storeFactory(orm, {
        secrets: SecretBox.fromString(SecretBox.generateKey()),
        rego: {
          session: () => {
            throw new Error('the board bench writes no policies');
          },
        },
      }),
      orm,
      logger,
      bodyLimit: '1mb',
      version: 'bench',
      transport: { trustedProxies: [], allowInsecurePull: false },
      readiness: { postgres: () => pingDatabase(orm) },
    });
    const server = await listen(app, '127.0.0.1', 0);
    try {
      const session = await fetch(`${server.url}/ui/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: key }),
      });
      const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
      const board = `${server.url}/ui/board.json`;
      return {
        workspace: { deployments: DEPLOYMENTS, environments: ENVIRONMENTS, ...counts, seedSeconds },
        requests: REQUESTS,
        boardJson: {
          whole: await measure(board, cookie),
          oneSystem: await measure(`${board}?system=system-1`, cookie),
          oneEnvironment: await measure(`${board}?environment=env-001`, cookie),
          search: await measure(`${board}?q=service-01`, cookie),
        },
        deploymentPage: await measure(`${server.url}/ui/deployments/service-001/board.json`, cookie),
        goal: 'board.json p99 ≤ 200 ms',
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
