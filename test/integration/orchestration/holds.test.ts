import type { EntityManager } from '@mikro-orm/postgresql';
import { eventually } from '../../helpers/eventually';
import { dtstart, recordsApi } from '../../helpers/orchestration';
import { holdCreateCommand, holdDeleteCommand, holdListCommand } from '../../../cli/commands/hold';
import { listenOnSocket, startTestStack, type TestStack } from '../../helpers/stack';

interface Hold {
  id: string;
  selector: string;
  effect: 'block' | 'pin';
  versionId?: string;
  reason: string;
  expiresAt?: string;
  active: boolean;
  createdBy: { id: string; name: string };
}

type Rule = { kind: string; ruleId?: string; state: string; reason: string };

/**
 * Holds block or pin the targets a selector matches; a scheduled block is a freeze
 * (docs/behaviour.md "Holds and freezes").
 */
describe('holds', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let agent: string;

  beforeAll(async () => {
    stack = await startTestStack();
    api = recordsApi(stack);
    agent = await api.agent('hold-puller', 'http-pull');
  });
  afterAll(async () => {
    await stack?.close();
  });

  const holdCount = async () =>
    Number(
      (
        await (stack.orm.em.fork() as EntityManager).execute<{ n: string }[]>(
          'SELECT count(*) AS n FROM hold',
        )
      )[0]!.n,
    );
  const createHold = async (body: object): Promise<Hold> => {
    const res = await stack.http.post(`${api.ws}/holds`).set(stack.auth).send(body);
    if (res.status !== 201)
      throw new Error(`POST /holds answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as Hold;
  };
  const polled = async (deploymentId: string) =>
    (
      await api.get<{ items: { id: string; deployment: { id: string } }[] }>(
        `/job-agents/${agent}/jobs?limit=100`,
      )
    ).items
      .filter((item) => item.deployment.id === deploymentId)
      .map((item) => item.id);
  const claim = (jobId: string) =>
    stack.http.post(`${api.ws}/job-agents/${agent}/jobs/${jobId}/claim`).set(stack.auth);
  const rulesOf = async (releaseId: string) =>
    (await api.get<{ evaluation: { rules: Rule[] } }>(`/releases/${releaseId}`)).evaluation.rules;

  it('a block keeps queued jobs from polls and claims, its releases wait, a break-glass skip lets one version go, and a delete frees the rest', async () => {
    const system = await api.system('holds');
    await api.environment('holds-prod', 'resource.metadata["lane"] == "holds-prod"', system);
    const first = await api.resource('holds-node-1', 'service', { lane: 'holds-prod' });
    await api.resource('holds-node-2', 'service', { lane: 'holds-prod' });
    const deployment = await api.deployment('holds', system, { jobAgents: [{ ref: 'hold-puller' }] });
    const version = await api.version(deployment, '1.0.0');
    const queued = await api.jobsSettleAt(
      2,
      `&deploymentId=${deployment}&status=queued`,
      'the version’s jobs',
    );
    expect((await polled(deployment)).sort()).toEqual(queued.map((job) => job.id).sort());

    // Refused, and nothing written.
    const body = { selector: 'environment.name == "holds-prod"', effect: 'block', reason: 'incident 4411' };
    const refusals: [object, number][] = [
      [{ ...body, selector: 'environment.name ==' }, 400],
      [{ ...body, selector: 'version.tag == "1"' }, 400],
      [{ ...body, effect: 'pin' }, 400],
      [{ ...body, versionId: version }, 400],
      [{ ...body, effect: 'pin', versionId: '00000000-0000-4000-8000-000000000002' }, 404],
      [{ ...body, expiresAt: new Date(Date.now() - 1000).toISOString() }, 400],
      [{ ...body, schedule: { rrule: 'FREQ=SECONDLY', durationSeconds: 60 } }, 400],
      // Never starts: answered at once (the rule library searched to the year 9999 for 80 s).
      [{ ...body, schedule: { rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31', durationSeconds: 60 } }, 400],
      [{ ...body, schedule: { rrule: 'FREQ=DAILY', durationSeconds: 60, timeZone: 'Mars/Olympus' } }, 400],
      [
        {
          ...body,
          effect: 'pin',
          versionId: version,
          schedule: { rrule: 'FREQ=DAILY', durationSeconds: 60 },
        },
        400,
      ],
    ];
    for (const [refused, status] of refusals) {
      const res = await stack.http.post(`${api.ws}/holds`).set(stack.auth).send(refused);
      expect([res.status, JSON.stringify(refused)]).toEqual([status, JSON.stringify(refused)]);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect((await stack.http.post(`${api.ws}/holds`).send(body)).status).toBe(401);
    expect(await holdCount()).toBe(0);

    const hold = await createHold(body);
    expect(hold).toMatchObject({ ...body, active: true, createdBy: { name: 'test' } });
    expect(hold.expiresAt).toBeUndefined();

    // Queued jobs are kept from agents at once: not polled, and a claim says why.
    expect(await polled(deployment)).toEqual([]);
    const refused = await claim(queued[0]!.id);
    expect([refused.status, refused.body.code]).toEqual([409, 'job_held']);
    expect(refused.body.detail ?? refused.body.title).toContain(
      `held by hold ${hold.id} of test: incident 4411`,
    );

    // A resource that joins meanwhile gets a release that waits at the hold, with who and why.
    const late = await api.resource('holds-node-3', 'service', { lane: 'holds-prod' });
    const waiting = await api.releaseWith(
      (r) => r.resourceId === late && r.evaluation?.decision === 'wait',
      'the late target’s release to wait at the hold',
    );
    expect((await rulesOf(waiting.id)).find((rule) => rule.kind === 'hold')).toMatchObject({
      ruleId: hold.id,
      state: 'waiting',
      reason: 'held by test until deleted: incident 4411',
    });
    const explained = await api.get<{ rules: Rule[] }>(
      `/release-targets/${late}-${waiting.environmentId}-${deployment}/explain`,
    );
    expect(JSON.stringify(explained)).toContain('held by test until deleted: incident 4411');

    // Break-glass: a skip of the hold for the version on one resource frees that resource's job alone.
    const skip = await stack.http
      .post(`${api.ws}/policy-skips`)
      .set(stack.auth)
      .send({ ruleId: hold.id, versionId: version, resourceId: first, reason: 'the fix for 4411 itself' });
    expect(skip.status).toBe(201);
    const firstJob = queued.find((job) => job.resourceId === first)!;
    expect(await polled(deployment)).toEqual([firstJob.id]);
    expect((await claim(firstJob.id)).status).toBe(200);
    const other = queued.find((job) => job.resourceId !== first)!;
    expect((await claim(other.id)).status).toBe(409);

    // Deleted: the held job can be claimed and the waiting release starts its job.
    const deleted = await stack.http.delete(`${api.ws}/holds/${hold.id}`).set(stack.auth);
    expect([deleted.status, deleted.body.id]).toEqual([200, hold.id]);
    expect((await claim(other.id)).status).toBe(200);
    await api.jobsSettleAt(1, `&deploymentId=${deployment}&resourceId=${late}&status=queued`, 'the late job');
    expect((await stack.http.get(`${api.ws}/holds/${hold.id}`).set(stack.auth)).status).toBe(404);
  });

  it('a pin brings its targets back to the pinned version while a newer one is ready, and lets the newest go when deleted', async () => {
    const system = await api.system('pins');
    await api.environment('pins-prod', 'resource.metadata["lane"] == "pins-prod"', system);
    await api.resource('pins-node-1', 'service', { lane: 'pins-prod' });
    await api.resource('pins-node-2', 'service', { lane: 'pins-prod' });
    const deployment = await api.deployment('pins', system, { jobAgents: [{ ref: 'hold-puller' }] });
    const deploy = async (tag: string, runs: number) => {
      const versionId = await api.version(deployment, tag);
      const jobs = await api.jobsSettleAt(
        2,
        `&deploymentId=${deployment}&status=queued`,
        `the jobs of ${tag} (run ${runs})`,
      );
      for (const job of jobs) await api.report(job.id, 'successful');
      await eventually(
        async () =>
          (await api.releases(`&deploymentId=${deployment}`)).filter(
            (r) => r.versionId === versionId && r.phase === 'succeeded',
          ).length === 2,
        { what: `${tag} to succeed on both targets`, timeoutMs: 30_000 },
      );
      return versionId;
    };
    const good = await deploy('1.0.0', 1);
    await deploy('2.0.0', 1);

    const pin = await createHold({
      selector: 'environment.name == "pins-prod"',
      effect: 'pin',
      versionId: good,
      reason: '2.0.0 leaks memory',
    });
    expect(pin).toMatchObject({ effect: 'pin', versionId: good });
    // Both targets run 1.0.0 again: its releases run once more.
    const back = await api.jobsSettleAt(
      2,
      `&deploymentId=${deployment}&status=queued`,
      'the pinned version’s jobs',
    );
    for (const job of back) {
      const release = await api.get<{ versionId: string }>(`/releases/${job.releaseId}`);
      expect(release.versionId).toBe(good);
      await api.report(job.id, 'successful');
    }

    // A newer version waits at the pin, saying which version and why.
    const newer = await api.version(deployment, '3.0.0');
    const waiting = await api.releaseWith(
      (r) => r.versionId === newer && r.evaluation?.decision === 'wait',
      'the newer version to wait at the pin',
    );
    expect((await rulesOf(waiting.id)).find((rule) => rule.kind === 'hold')?.reason).toBe(
      'pinned to 1.0.0 by test until deleted: 2.0.0 leaks memory',
    );
    await api.jobsSettleAt(0, `&deploymentId=${deployment}&status=queued`, 'no job of the newer version');

    // Unpinned, the newest version goes.
    expect((await stack.http.delete(`${api.ws}/holds/${pin.id}`).set(stack.auth)).status).toBe(200);
    const newest = await api.jobsSettleAt(
      2,
      `&deploymentId=${deployment}&status=queued`,
      'the newest version’s jobs',
    );
    for (const job of newest)
      expect((await api.get<{ versionId: string }>(`/releases/${job.releaseId}`)).versionId).toBe(newer);
  });

  it('a freeze holds new jobs and queued ones only inside its window', async () => {
    const system = await api.system('freezes');
    await api.environment('freeze-prod', 'resource.metadata["lane"] == "freeze-prod"', system);
    await api.resource('freeze-node-1', 'service', { lane: 'freeze-prod' });
    const deployment = await api.deployment('freezes', system, { jobAgents: [{ ref: 'hold-puller' }] });
    const opens = new Date(Math.ceil((Date.now() + 6_000) / 1000) * 1000);
    const freeze = await createHold({
      selector: 'deployment.slug == "freezes"',
      effect: 'block',
      reason: 'end-of-year freeze',
      schedule: { rrule: `${dtstart(opens)}\nRRULE:FREQ=DAILY`, durationSeconds: 8, timeZone: 'UTC' },
    });

    // Outside the window the freeze changes nothing.
    await api.version(deployment, '1.0.0');
    const [job] = await api.jobsSettleAt(
      1,
      `&deploymentId=${deployment}&status=queued`,
      'the job before the window',
    );
    expect(await polled(deployment)).toEqual([job!.id]);

    // Inside it, the queued job is kept from agents and a new target's release waits until it closes.
    await eventually(async () => (await polled(deployment)).length === 0, {
      what: 'the window to open and hold the queued job',
      timeoutMs: 15_000,
    });
    expect(Date.now()).toBeGreaterThanOrEqual(opens.getTime());
    const late = await api.resource('freeze-node-2', 'service', { lane: 'freeze-prod' });
    const waiting = await api.releaseWith(
      (r) => r.resourceId === late && r.evaluation?.decision === 'wait',
      'the new target’s release to wait inside the window',
    );
    const closes = new Date(opens.getTime() + 8_000).toISOString();
    expect((await rulesOf(waiting.id)).find((rule) => rule.kind === 'hold')).toMatchObject({
      ruleId: freeze.id,
      reason: `held by test until ${closes}: end-of-year freeze`,
    });
    expect((await claim(job!.id)).status).toBe(409);

    // Closed again: the job can be claimed and the waiting release starts its job.
    await eventually(async () => (await polled(deployment)).length === 2, {
      what: 'the window to close and both jobs to be offered',
      timeoutMs: 20_000,
    });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(closes));
    expect((await claim(job!.id)).status).toBe(200);
  });

  it('from the CLI: created, listed and deleted, with refusals on stderr', async () => {
    const server = await listenOnSocket(stack);
    try {
      const lines: string[] = [];
      const write = (line: string) => lines.push(line);
      const connection = { api: server.url, key: stack.apiKey, workspace: stack.workspaceId };
      const created = {
        ...connection,
        selector: 'environment.name == "cli-frozen"',
        effect: 'block' as const,
        reason: 'year-end',
        rrule: 'FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24',
        durationSeconds: '172800',
        timeZone: 'Europe/Berlin',
      };
      expect(await holdCreateCommand(created, write, write)).toBe(0);
      expect(lines.at(-1)).toMatch(
        /^\S+ {2}freeze {2}environment.name == "cli-frozen" {2}windows FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24 for 172800 s \(Europe\/Berlin\) {2}until deleted {2}by test: year-end$/,
      );
      const id = lines.at(-1)!.split('  ')[0]!;
      const listedFrom = lines.length;
      expect(await holdListCommand({ ...connection, effect: 'block', active: 'true' }, write, write)).toBe(0);
      expect(lines.slice(listedFrom)).toContain(lines[listedFrom - 1]);
      expect(await holdCreateCommand({ ...created, effect: 'pin' }, write, write)).toBe(1);
      expect(lines.at(-1)).toMatch(/^flightdeck hold create: 400 /);
      expect(await holdDeleteCommand(id, connection, write, write)).toBe(0);
      expect(lines.at(-1)).toMatch(/^deleted /);
      expect(await holdDeleteCommand(id, connection, write, write)).toBe(1);
      expect(lines.at(-1)).toMatch(/hold delete: 404/);
    } finally {
      await server.close();
    }
  });
});
