import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'pg';
import {
  count,
  inParallel,
  round,
  startFlightdeckStack,
  waitFor,
  workspaceApi,
  type Query,
} from './environment';
import { laneBuilder, type Call, type LaneDeployment } from './lanes';

/**
 * A rollout in waves against the same fan-out without them, on `flightdeck start` from dist/: two
 * deployments over the same BENCH_WAVES_TARGETS (10,000) targets, one under a waves rule of
 * BENCH_WAVES_COUNT (5) waves (by the last digit of the resource's name) with `maxParallel`
 * BENCH_WAVES_MAX_PARALLEL (500) and no bake. A version of each, one after the other, while an agent
 * reports every queued job successful as soon as it sees it (16 reports at a time). Printed, for
 * each: the first job after the version, the last job's end, the total; for the waves, the most
 * active jobs a wave had at once and whether any wave began before the one before it had ended.
 */
const TARGETS = Number(process.env.BENCH_WAVES_TARGETS ?? 10_000);
const WAVES = Number(process.env.BENCH_WAVES_COUNT ?? 5);
const MAX_PARALLEL = Number(process.env.BENCH_WAVES_MAX_PARALLEL ?? 500);
const WRITERS = 8;
const REPORTERS = 16;

export async function run(): Promise<Record<string, unknown>> {
  const stack = await startFlightdeckStack();
  const pool = new Pool({ connectionString: stack.databaseUrl, max: 4 });
  const query: Query = async (sql, params = []) => (await pool.query(sql, params)).rows;
  try {
    const call = workspaceApi(stack.apiUrl, stack.workspaceId, stack.apiKey);
    await waitFor(async () => (await fetch(`${stack.apiUrl}/readyz`)).ok, 'the API to be ready');
    const system = await call('POST', '/systems', { name: 'waves' });
    const lane = await laneBuilder(stack, call, query, system.id, WRITERS).create('waves', TARGETS, 2);
    const [plain, waved] = [lane.deployment('0'), lane.deployment('1')];
    await call('POST', '/policies', {
      name: 'bench waves',
      selector: `deployment.id == "${waved.id}"`,
      rules: [{ waves: { waves: waveSpecs() } }],
    });
    const withoutWaves = await shipAndDrain(call, query, plain);
    const inWaves = await shipAndDrain(call, query, waved);
    return {
      stack: 'flightdeck start from dist/: embedded PostgreSQL, embedded Temporal (SQLite), API and worker',
      targets: TARGETS,
      waves: WAVES,
      maxParallel: MAX_PARALLEL,
      withoutWaves,
      inWaves: { ...inWaves, ...(await waveFigures(query, waved)) },
      totalRatio: round(inWaves.totalSeconds / withoutWaves.totalSeconds),
      memoryPeakMb: stack.memoryPeak(),
    };
  } finally {
    await pool.end();
    await stack.stop();
  }
}

/** The waves: resources by the last digit of their name, in equal groups. */
function waveSpecs() {
  const digits = Array.from({ length: 10 }, (_, n) => `${n}`);
  const per = Math.ceil(digits.length / WAVES);
  return Array.from({ length: WAVES }, (_, wave) => ({
    name: `w${wave}`,
    selector: digits
      .slice(wave * per, (wave + 1) * per)
      .map((digit) => `resource.name.endsWith("${digit}")`)
      .join(' || '),
    maxParallel: MAX_PARALLEL,
  }));
}

/**
 * A version of the deployment, its jobs reported successful as they are queued: the first job's
 * queueing and the last release's end after the version request, in seconds.
 */
async function shipAndDrain(call: Call, query: Query, deployment: LaneDeployment) {
  const started = performance.now();
  await call('POST', `/deployments/${deployment.id}/versions`, { tag: '1.0.0' });
  let firstJobSeconds: number | undefined;
  const reported = new Set<string>();
  while (reported.size < deployment.size) {
    const queued = await query<{ id: string }>(
      `SELECT id FROM job WHERE job_agent_id = $1 AND status = 'queued' ORDER BY created_at LIMIT 2000`,
      [deployment.agentId],
    );
    const fresh = queued.filter((job) => !reported.has(job.id));
    if (fresh.length > 0) firstJobSeconds ??= (performance.now() - started) / 1000;
    if (fresh.length === 0) await sleep(20);
    await inParallel(fresh.length, REPORTERS, async (n) => {
      const job = fresh[n]!;
      reported.add(job.id);
      await call('PUT', `/jobs/${job.id}/status`, { status: 'successful' });
    });
    if (performance.now() - started > 1_800_000)
      throw new Error(`${reported.size} of ${deployment.size} jobs ran`);
  }
  await waitFor(
    async () =>
      (await count(
        query,
        `SELECT count(*)::int AS n FROM release WHERE deployment_id = $1 AND phase = 'succeeded'`,
        [deployment.id],
      )) === deployment.size,
    'every release to succeed',
    600_000,
  );
  return {
    firstJobSeconds: round(firstJobSeconds ?? 0),
    totalSeconds: round((performance.now() - started) / 1000),
  };
}

/** How the waves ran, from their jobs' times: the most active at once in a wave, and overlaps between waves. */
async function waveFigures(query: Query, deployment: LaneDeployment) {
  const jobs = await query<{ wave: number; created_at: Date; completed_at: Date }>(
    `SELECT m.wave, j.created_at, j.completed_at FROM job j JOIN rollout_member m ON m.release_id = j.release_id
      WHERE j.deployment_id = $1`,
    [deployment.id],
  );
  const byWave = Array.from({ length: WAVES + 1 }, (_, wave) => jobs.filter((job) => job.wave === wave));
  const mostActive = byWave.map((wave) => {
    const events = wave.flatMap((job) => [
      { at: job.created_at.getTime(), step: 1 },
      { at: job.completed_at.getTime(), step: -1 },
    ]);
    events.sort((a, b) => a.at - b.at || a.step - b.step);
    let active = 0;
    let most = 0;
    for (const event of events) most = Math.max(most, (active += event.step));
    return most;
  });
  const overlaps = byWave.slice(1).filter((wave, n) => {
    const earlier = byWave[n]!;
    if (wave.length === 0 || earlier.length === 0) return false;
    const earlierEnd = Math.max(...earlier.map((job) => job.completed_at.getTime()));
    return Math.min(...wave.map((job) => job.created_at.getTime())) < earlierEnd;
  }).length;
  return {
    jobsPerWave: byWave.map((wave) => wave.length),
    mostActiveInAWave: Math.max(...mostActive),
    waveOverlaps: overlaps,
  };
}
