import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { harnessValue } from '../../harness';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { agentKey } from '../../helpers/pull';
import { listenOnSocket, startTestStack, type TestStack } from '../../helpers/stack';

/** Where the board's screenshot is written, for people and for docs/api.md "The rollout board". */
const SCREENSHOT = path.join(__dirname, '../../../test-results/rollout-board.png');

/** The rollout board (docs/api.md "The rollout board"), driven in headless Chromium against a real stack. */
describe('rollout board (/ui)', () => {
  let stack: TestStack;
  let server: Awaited<ReturnType<typeof listenOnSocket>>;
  let base: string;
  let browser: Browser;
  let pullerId: string;
  let boardSystem: string;

  beforeAll(async () => {
    stack = await startTestStack({ temporalUi: { url: 'http://temporal-ui.test', namespace: 'default' } });
    // The CLI and the browser speak HTTP: the stack's app on a real socket.
    server = await listenOnSocket(stack);
    base = server.url;
    browser = await chromium.launch({ executablePath: harnessValue('chromium'), args: ['--no-sandbox'] });

    const api = recordsApi(stack);
    await api.agent('board-runner', 'test-runner', { status: 'successful' });
    pullerId = await api.agent('board-puller', 'http-pull');
    const system = await api.system('board');
    boardSystem = system;
    const staging = await api.environment('staging', 'resource.metadata["env"] == "staging"', system);
    await api.environment('production', 'resource.metadata["env"] == "production"', system);
    for (const n of [1, 2]) await api.resource(`web-staging-${n}`, 'service', { env: 'staging' });
    for (const n of [1, 2, 3]) await api.resource(`web-prod-${n}`, 'service', { env: 'production' });
    const web = await api.deployment('web', system, { jobAgents: [{ ref: 'board-runner' }] });
    const worker = await api.deployment('worker', system, { jobAgents: [{ ref: 'board-puller' }] });
    // Another system, for the filters: its deployment has a target in its own environment only.
    const payments = await api.system('payments');
    await api.environment('qa', 'resource.metadata["env"] == "qa"', payments);
    await api.resource('ledger-qa-1', 'service', { env: 'qa' });
    await api.deployment('ledger', payments);
    await api.policy({
      name: 'approve production',
      selector: 'environment.name == "production" && deployment.slug == "web"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    const v1 = await api.version(web, '1.4.0');
    await eventually(
      async () =>
        (await api.releases(`&versionId=${v1}`)).filter(
          (r) => r.environmentId === staging && r.phase === 'succeeded',
        ).length === 2,
      { what: 'web 1.4.0 to succeed on both staging targets', timeoutMs: 30_000 },
    );
    await api.version(worker, '2.0.0');
    await api.jobsSettleAt(5, `&deploymentId=${worker}&status=queued`, 'the worker jobs to queue');
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await stack.close();
  });

  it('signs in with an API key, a session kept in an HttpOnly, SameSite=Strict cookie, and shows the matrix', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    // Whatever the page's Content-Security-Policy refuses, Chromium reports on the console.
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/.test(message.text())) refusals.push(message.text());
    });
    await page.goto(`${base}/ui/`);
    await page.locator('#key').fill(stack.apiKey);
    await page.locator('#signin button[type=submit]').click();
    const staging = page.locator('td[data-deployment="web"][data-environment="staging"]');
    // The page's CSP allows no eval: wait with locators, not page functions.
    await staging.filter({ hasText: 'succeeded 2' }).waitFor({ timeout: 30_000 });
    // Labels say what happened on the targets, not how far the fan-out went.
    expect(await staging.innerText()).toMatch(/on 1\.4\.0: 2 of 2/);
    const production = page.locator('td[data-deployment="web"][data-environment="production"]');
    expect(await production.innerText()).toMatch(/no version yet: 3 of 3[\s\S]*headed to 1\.4\.0: 3/);
    expect(await production.innerText()).toMatch(/pending 3[\s\S]*0 of 1 approvals/);
    expect(await page.locator('.version[data-deployment="web"]').innerText()).toMatch(/on 1\.4\.0: 2 of 5/);
    expect(await page.locator('.version[data-deployment="worker"]').innerText()).toMatch(
      /on 2\.0\.0: 0 of 5/,
    );
    // The progress bars are drawn under the CSP (no inline style): 2 of 5 fills 40 %, 0 of 5 nothing.
    const filled = async (deployment: string) => {
      const bar = page.locator(`.version[data-deployment="${deployment}"] .bar`);
      const [whole, fill] = [await bar.boundingBox(), await bar.locator('div').boundingBox()];
      return Math.round((100 * fill!.width) / whole!.width);
    };
    expect([await filled('web'), await filled('worker')]).toEqual([40, 0]);
    expect(await page.locator('#board').innerText()).not.toMatch(/completed/);
    const workerCell = page.locator('td[data-deployment="worker"][data-environment="production"]');
    expect(await workerCell.innerText()).toMatch(/running 3/);
    expect(await workerCell.locator('ul.jobs a').first().getAttribute('href')).toMatch(/^\/ui\/jobs\//);
    expect(await workerCell.locator('a', { hasText: 'board-puller' }).first().getAttribute('href')).toMatch(
      /^\/ui\/job-agents\//,
    );
    expect(await workerCell.locator('a', { hasText: 'workflow' }).first().getAttribute('href')).toMatch(
      /^http:\/\/temporal-ui\.test\/namespaces\/default\/workflows\/release%2F/,
    );
    const jobHref = (await workerCell.locator('ul.jobs a').first().getAttribute('href'))!;
    const job = await page.request.get(`${base}${jobHref}`);
    expect(job.status()).toBe(200);
    expect(await job.json()).toMatchObject({ status: 'queued' });

    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({
      name: 'flightdeck_session',
      httpOnly: true,
      sameSite: 'Strict',
      path: '/ui',
      secure: false,
    });
    expect(cookie!.value).not.toContain(stack.apiKey);
    expect(
      await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie),
    ).toBe('');

    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    expect(refusals).toEqual([]);

    // Signing out ends the session on the server: its id, replayed, reads nothing.
    await page.locator('#signout').click();
    await page.locator('#signin-error', { hasText: 'Signed out.' }).waitFor();
    const replayed = await fetch(`${base}/ui/board.json`, {
      headers: { cookie: `flightdeck_session=${cookie!.value}` },
    });
    expect(replayed.status).toBe(401);
    await context.close();
  }, 60_000);

  /** Errors the board's script threw in a signed-in page: none may. */
  const pageErrors: string[] = [];
  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });

  /** A browser context signed in to the board, as the sign-in form does it. */
  async function signedIn(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const session = await context.request.post(`${base}/ui/session`, { data: { apiKey: stack.apiKey } });
    expect(session.status()).toBe(204);
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    return { context, page };
  }

  /** The matrix's column and row headings, as the page shows them. */
  async function matrix(page: Page): Promise<{ columns: string[]; rows: string[] }> {
    const columns = await page.locator('#matrix tr').first().locator('th').allInnerTexts();
    const rows = await page.locator('#matrix tr th a').allInnerTexts();
    return { columns: columns.slice(1), rows };
  }

  it('filters by system, deployment, environment and search, server-side, kept in the URL', async () => {
    const { context, page } = await signedIn();
    await page.goto(`${base}/ui/?system=payments`);
    await page
      .locator('td[data-deployment="ledger"][data-environment="qa"]', { hasText: 'no version yet: 1 of 1' })
      .waitFor();
    expect(await matrix(page)).toEqual({ columns: ['qa'], rows: ['ledger'] });
    expect(await page.locator('#f-system option:checked').allInnerTexts()).toEqual(['payments']);
    expect(await page.locator('#shown').innerText()).toBe('1 of 3 deployments × 1 of 3 environments');

    await page.locator('#clear').click();
    await page.waitForURL(`${base}/ui/`);
    await page.locator('#f-environment').selectOption(['production']);
    await page.waitForURL(`${base}/ui/?environment=production`);
    await page.locator('#shown', { hasText: '3 of 3 deployments × 1 of 3 environments' }).waitFor();
    expect(await matrix(page)).toEqual({ columns: ['production'], rows: ['ledger', 'web', 'worker'] });

    await page.locator('#q').fill('work');
    await page.waitForURL(`${base}/ui/?environment=production&q=work`);
    await page.locator('#shown', { hasText: '1 of 3 deployments × 1 of 3 environments' }).waitFor();
    expect(await matrix(page)).toEqual({ columns: ['production'], rows: ['worker'] });
    expect(await page.locator('td[data-deployment="worker"]').innerText()).toMatch(/running 3/);

    // The search narrows the columns when it names environments, and the URL reloads as it was.
    await page.goto(`${base}/ui/?q=STAG`);
    await page.locator('#shown', { hasText: '3 of 3 deployments × 1 of 3 environments' }).waitFor();
    expect(await matrix(page)).toEqual({ columns: ['staging'], rows: ['ledger', 'web', 'worker'] });
    expect(await page.locator('#q').inputValue()).toBe('STAG');

    const json = await context.request.get(
      `${base}/ui/board.json?deployment=web&deployment=worker&environment=staging`,
    );
    expect(json.status()).toBe(200);
    const board = (await json.json()) as {
      deployments: { slug: string; targets: number; latestVersion: { tag: string; onTargets: number } }[];
      environments: { name: string }[];
      cells: { targets: number; current: { tag: string; targets: number }[] }[];
      choices: { systems: { slug: string }[]; deployments: unknown[]; environments: unknown[] };
    };
    expect(
      board.deployments.map((d) => [d.slug, d.targets, d.latestVersion.tag, d.latestVersion.onTargets]),
    ).toEqual([
      ['web', 2, '1.4.0', 2],
      ['worker', 2, '2.0.0', 0],
    ]);
    expect(board.environments.map((e) => e.name)).toEqual(['staging']);
    expect(board.cells).toHaveLength(2);
    expect(board.choices.systems.map((s) => s.slug)).toEqual(['board', 'payments']);
    expect([board.choices.deployments.length, board.choices.environments.length]).toEqual([3, 3]);
    const none = (await (await context.request.get(`${base}/ui/board.json?q=nothing-like-this`)).json()) as {
      deployments: unknown[];
      environments: unknown[];
      cells: unknown[];
    };
    expect([none.deployments, none.environments, none.cells]).toEqual([[], [], []]);
    await context.close();
  }, 60_000);

  it('answers a bad filter with 400 problem+json, before reading the board', async () => {
    const { context } = await signedIn();
    const many = Array.from({ length: 101 }, (_, n) => `deployment=d${n}`).join('&');
    for (const [query, path] of [
      ['bogus=1', 'query.bogus'],
      [`q=${'x'.repeat(101)}`, 'query.q'],
      [many, 'query.deployment'],
      ['deployment=not%20a%20slug', 'query.deployment'],
      [`environment=${'e'.repeat(201)}`, 'query.environment'],
    ] as const) {
      const response = await context.request.get(`${base}/ui/board.json?${query}`);
      expect(response.status()).toBe(400);
      expect(response.headers()['content-type']).toMatch(/^application\/problem\+json/);
      const problem = (await response.json()) as { code: string; errors: { path: string }[] };
      expect(problem.code).toBe('validation_failed');
      expect(problem.errors.map((e) => e.path)).toContain(path);
    }
    expect((await context.request.get(`${base}/ui/deployments/nope/board.json`)).status()).toBe(404);
    await context.close();
  });

  it("shows a deployment's page: its versions, its targets by state, its recent releases", async () => {
    const { context, page } = await signedIn();
    await page.goto(`${base}/ui/`);
    await page.locator('#matrix th a', { hasText: 'web' }).click();
    await page.waitForURL(`${base}/ui/deployments/web`);
    const version = page.locator('#d-versions tr[data-version="1.4.0"]');
    await version.waitFor();
    expect(await page.locator('#d-title').innerText()).toBe('web (web)');
    expect(await page.locator('#d-summary').innerText()).toBe('5 targets · systems: board');
    expect(await version.innerText()).toMatch(
      /ready[\s\S]*on 1\.4\.0: 2 of 5[\s\S]*(pending 3[\s\S]*succeeded 2|succeeded 2[\s\S]*pending 3)/,
    );
    const staging = page.locator('#d-environments tr[data-environment="staging"]');
    expect(await staging.innerText()).toMatch(/on 1\.4\.0: 2 of 2[\s\S]*succeeded 2/);
    const production = page.locator('#d-environments tr[data-environment="production"]');
    expect(await production.innerText()).toMatch(
      /no version yet: 3 of 3[\s\S]*pending 3[\s\S]*0 of 1 approvals/,
    );
    const releases = page.locator('#d-releases tr[data-release]');
    expect(await releases.count()).toBe(5);
    const rows = (await releases.allInnerTexts()).map((row) => row.split('\t').slice(1, 5).join(' '));
    expect(
      rows.filter((row) => row.startsWith('1.4.0 staging web-staging-') && row.endsWith('succeeded')),
    ).toHaveLength(2);
    expect(
      rows.filter((row) => row.startsWith('1.4.0 production web-prod-') && row.endsWith('pending')),
    ).toHaveLength(3);
    expect(await releases.first().locator('a', { hasText: 'workflow' }).getAttribute('href')).toMatch(
      /^http:\/\/temporal-ui\.test\/namespaces\/default\/workflows\/release%2F/,
    );
    expect(await page.locator('#deployment').innerText()).not.toMatch(/completed/);
    // Delivery: the two staging successes, charted on today's bar.
    expect(await page.locator('#d-dora').innerText()).toMatch(
      /^2 deployments \(0\.067\/day\) · lead time p50 \d+ min · change failure rate 0% · time to restore p50 —$/,
    );
    const today = new Date().toISOString().slice(0, 10);
    expect(
      await page.locator(`#d-chart rect.succeeded[data-day="${today}"]`).getAttribute('data-succeeded'),
    ).toBe('2');
    await context.close();
  }, 60_000);

  it('refuses a wrong key: the sign-in says so and the board stays closed', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/ui/`);
    await page.locator('#key').fill('fdk_not-a-real-key');
    await page.locator('#signin button[type=submit]').click();
    await page.locator('#signin-error', { hasText: 'That API key is not valid.' }).waitFor();
    expect(await page.locator('#board').isHidden()).toBe(true);
    expect(await context.cookies()).toEqual([]);
    const forged = await fetch(`${base}/ui/board.json`, {
      headers: { cookie: 'flightdeck_session=fds_forged' },
    });
    expect(forged.status).toBe(401);
    await context.close();
  });

  it("refuses a job agent's key: the sign-in says so and the board stays closed", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/ui/`);
    await page.locator('#key').fill(await agentKey(stack, pullerId));
    await page.locator('#signin button[type=submit]').click();
    await page.locator('#signin-error', { hasText: 'That key belongs to a job agent' }).waitFor();
    expect(await page.locator('#board').isHidden()).toBe(true);
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });

  it("approves, skips and holds from a deployment's page, and shows every lever with who, why and until when", async () => {
    const api = recordsApi(stack);
    await api.policy({
      name: 'approve checkout in production',
      selector: 'environment.name == "production" && deployment.slug == "checkout"',
      rules: [{ anyApproval: { minApprovals: 1 } }],
    });
    const checkout = await api.deployment('checkout', boardSystem, { jobAgents: [{ ref: 'board-runner' }] });
    const inProduction = async (versionId: string, phase: string) =>
      (await api.releases(`&versionId=${versionId}`)).filter(
        (r) => r.phase === phase && r.evaluation !== null && r.resourceId !== undefined,
      ).length;
    const v1 = await api.version(checkout, '1.0.0');
    await eventually(async () => (await inProduction(v1, 'pending')) === 3, {
      what: 'checkout 1.0.0 to wait for its approval in production',
    });

    const { context, page } = await signedIn();
    await page.goto(`${base}/ui/deployments/checkout`);
    // A skip of the approval rule, with a reason: every production target of 1.0.0 goes.
    await page.locator('#a-reason').fill('agreed on the call');
    await page.locator('button[data-action="skip"]', { hasText: 'Skip anyApproval' }).first().click();
    await page.locator('#action-result', { hasText: 'skipped until' }).waitFor();
    const skips = await api.get<{ items: { reason: string; createdBy: { name: string } }[] }>(
      `/policy-skips?versionId=${v1}`,
    );
    expect(skips.items).toMatchObject([{ reason: 'agreed on the call', createdBy: { name: 'test' } }]);
    await eventually(async () => (await inProduction(v1, 'succeeded')) === 5, {
      what: 'checkout 1.0.0 to succeed everywhere after the skip',
    });

    // An approval of the next version from its waiting release.
    const v2 = await api.version(checkout, '1.1.0');
    await eventually(async () => (await inProduction(v2, 'pending')) === 3, {
      what: 'checkout 1.1.0 to wait for its approval',
    });
    await page.locator('#a-reason').fill('looks good');
    await page
      .locator('tr[data-release]', { hasText: '1.1.0' })
      .locator('button[data-action="approve"]')
      .first()
      .click();
    await page.locator('#action-result', { hasText: 'approved' }).waitFor();
    await eventually(async () => (await inProduction(v2, 'succeeded')) === 5, {
      what: 'checkout 1.1.0 to succeed everywhere after the approval',
    });

    // A hold needs a reason; with one, the deployment is held and the levers say so.
    await page.locator('#a-reason').fill('');
    await page.locator('#a-hold').click();
    await page.locator('#action-result.problem', { hasText: 'The action is invalid' }).waitFor();
    expect((await api.get<{ total: number }>('/holds')).total).toBe(0);
    await page.locator('#a-reason').fill('freeze for the demo');
    await page.locator('#a-hold').click();
    await page.locator('#action-result', { hasText: 'held checkout' }).waitFor();
    const holds = await api.get<{ items: { selector: string; reason: string }[] }>('/holds');
    expect(holds.items).toMatchObject([
      { selector: 'deployment.slug == "checkout"', reason: 'freeze for the demo' },
    ]);
    await page
      .locator('#d-levers li', {
        hasText: 'block deployment.slug == "checkout" until deleted by test: freeze for the demo',
      })
      .waitFor();
    const v3 = await api.version(checkout, '1.2.0');
    await eventually(
      async () =>
        (await api.releases(`&versionId=${v3}`)).filter((r) =>
          r.evaluation?.reason.includes('held by test until deleted: freeze for the demo'),
        ).length === 5,
      { what: 'checkout 1.2.0 to wait at the hold' },
    );

    // The deployment's timeline: the board's approval as the signed-in key, the hold as the system applied it.
    await page.reload();
    const timeline = page.locator('#d-timeline');
    await timeline.locator('tr[data-event="hold.applied"]').first().waitFor();
    expect(await timeline.locator('tr[data-event="release.approved"]').first().innerText()).toContain(
      'key test',
    );

    // The board lists both levers; deleting the hold there lets 1.2.0 go (production still wants an approval).
    await page.goto(`${base}/ui/`);
    const levers = page.locator('#levers');
    await levers.locator('li', { hasText: 'freeze for the demo' }).waitFor();
    expect(await levers.innerText()).toMatch(
      /skip of rule \S+ for version \S+ until \S+ by test: agreed on the call/,
    );
    await levers.locator('button[data-action="unhold"]').click();
    await page.locator('#action-result', { hasText: 'hold deleted' }).waitFor();
    expect((await api.get<{ total: number }>('/holds')).total).toBe(0);
    await eventually(
      async () =>
        (await api.releases(`&versionId=${v3}`)).filter((r) => r.phase === 'succeeded').length === 2,
      { what: 'checkout 1.2.0 to succeed in staging once the hold is deleted' },
    );
    await context.close();
  }, 120_000);
});
