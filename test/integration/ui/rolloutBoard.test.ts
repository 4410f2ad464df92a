import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { harnessValue } from '../../harness';
import { eventually } from '../../helpers/eventually';
import { recordsApi } from '../../helpers/orchestration';
import { agentKey } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

/** Where the board's screenshot is written, for people and for the README. */
const SCREENSHOT = path.join(__dirname, '../../../test-results/rollout-board.png');

/** Issue 15: the rollout board, driven in headless Chromium against a real stack. */
describe('rollout board (/ui)', () => {
  let stack: TestStack;
  let server: http.Server;
  let base: string;
  let browser: Browser;
  let pullerId: string;

  beforeAll(async () => {
    stack = await startTestStack({ temporalUi: { url: 'http://temporal-ui.test', namespace: 'default' } });
    server = http.createServer(stack.app.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: harnessValue('chromium'), args: ['--no-sandbox'] });

    const api = recordsApi(stack);
    await api.agent('board-runner', 'test-runner', { status: 'successful' });
    pullerId = await api.agent('board-puller', 'http-pull');
    const system = await api.system('board');
    const staging = await api.environment('staging', 'resource.metadata["env"] == "staging"', system);
    await api.environment('production', 'resource.metadata["env"] == "production"', system);
    for (const n of [1, 2]) await api.resource(`web-staging-${n}`, 'service', { env: 'staging' });
    for (const n of [1, 2, 3]) await api.resource(`web-prod-${n}`, 'service', { env: 'production' });
    const web = await api.deployment('web', system, { jobAgents: [{ ref: 'board-runner' }] });
    const worker = await api.deployment('worker', system, { jobAgents: [{ ref: 'board-puller' }] });
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
    await new Promise((resolve) => server.close(resolve));
    await stack.close();
  });

  it('signs in with an API key kept in an HttpOnly, SameSite=Strict cookie and shows the matrix', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}/ui/`);
    await page.locator('#key').fill(stack.apiKey);
    await page.locator('#signin button[type=submit]').click();
    const staging = page.locator('td[data-deployment="web"][data-environment="staging"]');
    // The page's CSP allows no eval: wait with locators, not page functions.
    await staging.filter({ hasText: 'succeeded 2' }).waitFor({ timeout: 30_000 });
    expect(await staging.innerText()).toMatch(/current: 1\.4\.0 \(2\)/);
    const production = page.locator('td[data-deployment="web"][data-environment="production"]');
    expect(await production.innerText()).toMatch(/pending 3[\s\S]*0 of 1 approvals/);
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
    expect(cookie).toMatchObject({ name: 'flightdeck_key', httpOnly: true, sameSite: 'Strict', path: '/ui' });
    expect(
      await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie),
    ).toBe('');

    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
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
    const forged = await fetch(`${base}/ui/board.json`, { headers: { cookie: 'flightdeck_key=fdk_forged' } });
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
});
