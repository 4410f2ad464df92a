import type { EntityManager } from '@mikro-orm/postgresql';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

interface Figures {
  deployments: number;
  deploymentsPerDay: number;
  leadTimeSeconds: { p50: number | null; p90: number | null };
  failed: number;
  changeFailureRate: number | null;
  timeToRestoreSeconds: { p50: number | null; p90: number | null };
  unrestored: number;
}
interface Report {
  window: { days: number };
  daily: { day: string; succeeded: number; failed: number }[];
  overall: Figures;
  environments: (Figures & { environmentName: string })[];
}

const DAY = 86_400;

/**
 * DORA figures of a deployment (docs/behaviour.md "Delivery metrics"), checked against a history whose times
 * are set by hand.
 */
describe('DORA figures', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    await api.agent('dora-puller', 'http-pull');
  });
  afterAll(() => stack?.close());

  it('counts deployments, lead times, failures and restores per environment and overall', async () => {
    const system = await api.system('dora');
    await api.environment('dora-prod', 'resource.metadata["lane"] == "dora-prod"', system);
    await api.environment('dora-stage', 'resource.metadata["lane"] == "dora-stage"', system);
    await api.resource('dora-n1', 'service', { lane: 'dora-prod' });
    await api.resource('dora-n2', 'service', { lane: 'dora-prod' });
    await api.resource('dora-s1', 'service', { lane: 'dora-stage' });
    const deployment = await api.deployment('dora', system, { jobAgents: [{ ref: 'dora-puller' }] });
    const ship = async (tag: string, failOn: string[] = []) => {
      const versionId = await api.version(deployment, tag);
      const jobs = await api.jobsSettleAt(
        3,
        `&deploymentId=${deployment}&status=queued`,
        `the jobs of ${tag}`,
      );
      const names = new Map(
        (await api.get<{ items: { id: string; name: string }[] }>('/resources?limit=1000')).items.map((r) => [
          r.id,
          r.name,
        ]),
      );
      for (const job of jobs)
        await api.report(job.id, failOn.includes(names.get(job.resourceId)!) ? 'failure' : 'successful');
      await eventually(
        async () =>
          (await api.releases(`&versionId=${versionId}`)).filter((r) =>
            ['succeeded', 'failed'].includes(r.phase),
          ).length === 3,
        { what: `the releases of ${tag} to end` },
      );
      return versionId;
    };
    await ship('1.0.0');
    await ship('2.0.0', ['dora-n1']);
    await ship('3.0.0');

    // The history's times, by hand (days before now): versions 1.0.0 at 10, 2.0.0 at 5, 3.0.0 at 2;
    // 1.0.0 ended at 9 (n1, n2) and 9.5 (s1); 2.0.0 at 4 (n1 failed, n2) and 4.5 (s1); 3.0.0 at 1 (n1),
    // 0.5 (n2) and 1.5 (s1).
    await (stack.orm.em.fork() as EntityManager).execute(
      `WITH t AS (SELECT now() AS now),
            v AS (UPDATE deployment_version SET created_at = (SELECT now FROM t) - make_interval(days => (
                    CASE tag WHEN '1.0.0' THEN 10 WHEN '2.0.0' THEN 5 ELSE 2 END))
                   WHERE deployment_id = ?)
       UPDATE release r SET completed_at = (SELECT now FROM t) - make_interval(secs => ${DAY} * (
                CASE (SELECT tag FROM deployment_version WHERE id = r.version_id) || '/' || (SELECT name FROM resource WHERE id = r.resource_id)
                  WHEN '1.0.0/dora-s1' THEN 9.5 WHEN '2.0.0/dora-s1' THEN 4.5 WHEN '3.0.0/dora-s1' THEN 1.5
                  WHEN '3.0.0/dora-n1' THEN 1 WHEN '3.0.0/dora-n2' THEN 0.5
                  ELSE CASE (SELECT tag FROM deployment_version WHERE id = r.version_id) WHEN '1.0.0' THEN 9 ELSE 4 END
                END))
        WHERE r.deployment_id = ?`,
      [deployment, deployment],
    );

    const report = async (window?: string) =>
      api.get<Report>(`/deployments/${deployment}/metrics/dora${window ? `?window=${window}` : ''}`);
    const week = await report('7d');
    expect(week.window.days).toBe(7);
    const [prod, stage] = ['dora-prod', 'dora-stage'].map((name) =>
      week.environments.find((e) => e.environmentName === name),
    );
    // prod: 2.0.0 on n2, 3.0.0 on n1 and n2 succeeded (lead 1, 1 and 1.5 days: p90 1.4 days); 2.0.0 on
    // n1 failed and was restored by 3.0.0 three days later.
    expect(prod).toMatchObject({
      deployments: 3,
      deploymentsPerDay: 0.429,
      leadTimeSeconds: { p50: DAY, p90: 120_960 },
      failed: 1,
      changeFailureRate: 0.25,
      timeToRestoreSeconds: { p50: 3 * DAY, p90: 3 * DAY },
      unrestored: 0,
    });
    expect(stage).toMatchObject({
      deployments: 2,
      leadTimeSeconds: { p50: 0.5 * DAY, p90: 0.5 * DAY },
      failed: 0,
      changeFailureRate: 0,
      timeToRestoreSeconds: { p50: null, p90: null },
    });
    // Overall leads 0.5, 0.5, 1, 1, 1.5 days: p90 interpolates between the last two (1.3 days).
    expect(week.overall).toMatchObject({
      deployments: 5,
      deploymentsPerDay: 0.714,
      leadTimeSeconds: { p50: DAY, p90: 112_320 },
      failed: 1,
      changeFailureRate: 0.1667,
    });
    // The daily series adds up to the same releases.
    const sum = (key: 'succeeded' | 'failed') => week.daily.reduce((n, day) => n + day[key], 0);
    expect([sum('succeeded'), sum('failed')]).toEqual([5, 1]);
    expect(week.daily.map((day) => day.day)).toEqual([...week.daily.map((day) => day.day)].sort());
    // 30 days (the default) take in 1.0.0; three days only 3.0.0, which failed nowhere.
    expect((await report()).overall).toMatchObject({ deployments: 8, failed: 1 });
    expect((await report('3d')).overall).toMatchObject({
      deployments: 3,
      failed: 0,
      changeFailureRate: 0,
      timeToRestoreSeconds: { p50: null, p90: null },
    });

    for (const bad of ['0d', '366d', '30', 'week']) {
      const res = await stack.http
        .get(`${api.ws}/deployments/${deployment}/metrics/dora?window=${bad}`)
        .set(stack.auth);
      expect([bad, res.status]).toEqual([bad, 400]);
    }
  });
});
