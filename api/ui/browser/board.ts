/**
 * The rollout board's script, run by the browser on the page of api/ui/boardPage.ts. It signs in
 * with an API key (the API opens a session, whose id it keeps in an HttpOnly cookie), then reads
 * /ui/board.json every two seconds and redraws the deployment × environment matrix, narrowed by the
 * filters and search the page's URL carries; at /ui/deployments/{slug} it draws that deployment's
 * page from /ui/deployments/{slug}/board.json instead. Both list the levers in force (holds, skips:
 * who, why and until when); a deployment's page approves and skips its waiting releases and holds
 * the deployment, through /ui/actions as the signed-in key. Everything shown is inserted as text,
 * never as markup. Compiled alone for the browser (api/ui/boardScript.ts): it imports types only.
 */
import type {
  BoardCellJson,
  BoardJson,
  BoardLinksJson,
  DeploymentPageJson,
  DoraJson,
  LeversJson,
  RecentReleaseJson,
  TargetCountsJson,
  TimelineEventJson,
} from '../../../domain/boardJson';

/** An element of the page by id, of the kind the script uses it as (the page has them all). */
function byId<T extends Element>(id: string, kind: abstract new () => T): T {
  const node = document.getElementById(id);
  if (!(node instanceof kind)) throw new Error(`The board page has no ${kind.name} #${id}`);
  return node;
}
const $ = (id: string) => byId(id, HTMLElement);
const input = (id: string) => byId(id, HTMLInputElement);
const select = (id: string) => byId(id, HTMLSelectElement);

/** A new element with its attributes and children; strings become text, never markup. */
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

const number = (n: number) => n.toLocaleString('en-US');
const FILTERS = ['system', 'deployment', 'environment'];
// A deployment's page (/ui/deployments/{slug}) reads that deployment's board.
const deploymentPath = location.pathname.startsWith('/ui/deployments/')
  ? location.pathname.replace(/[/]+$/, '')
  : null;
let timer: number | undefined;
let choicesDrawn = '';
/** The deployment a deployment's page last drew: what its hold button holds. */
let deploymentShown: DeploymentPageJson['deployment'] | null = null;

function showSignIn(message?: string): void {
  clearTimeout(timer);
  $('board').hidden = true;
  $('deployment').hidden = true;
  $('signout').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message || '';
  $('status').textContent = '';
}

// What happened on targets: "on 1.4.0: 812 of 1,000" counts the targets whose current release
// (its job succeeded) deploys that version, of all the targets.
const onLabel = (tag: string, n: number, of: number) => 'on ' + tag + ': ' + number(n) + ' of ' + number(of);

function versionLines(cell: TargetCountsJson): HTMLElement[] {
  const lines = cell.current.map((v) => el('div', { class: 'on' }, onLabel(v.tag, v.targets, cell.targets)));
  const running = cell.current.reduce((n, v) => n + v.targets, 0);
  if (running < cell.targets)
    lines.push(
      el(
        'div',
        { class: 'on' },
        'no version yet: ' + number(cell.targets - running) + ' of ' + number(cell.targets),
      ),
    );
  for (const v of cell.desired) {
    const on = cell.current.find((c) => c.tag === v.tag);
    if (!on || on.targets < v.targets)
      lines.push(el('div', {}, 'headed to ' + v.tag + ': ' + number(v.targets - (on ? on.targets : 0))));
  }
  return lines;
}

function stateCounts(states: Record<string, number>): HTMLElement {
  const counts = el('div', { class: 'counts' });
  for (const [state, n] of Object.entries(states))
    counts.append(el('span', { class: state }, state + ' ' + number(n)));
  return counts;
}

function waitingList(waiting: TargetCountsJson['waiting']): HTMLElement {
  const list = el('ul', { class: 'waiting' });
  for (const w of waiting) list.append(el('li', {}, w.reason + (w.releases > 1 ? ' ×' + w.releases : '')));
  return list;
}

function workflowLink(links: BoardLinksJson, releaseId: string): HTMLElement | string {
  return links.releaseWorkflow
    ? el('a', { href: links.releaseWorkflow.replace('{releaseId}', releaseId) }, 'workflow')
    : '';
}

function jobList(links: BoardLinksJson, jobs: BoardCellJson['activeJobs']): HTMLElement {
  const list = el('ul', { class: 'jobs' });
  for (const job of jobs) {
    const item = el('li', {});
    // Ids are time-ordered (UUIDv7): their end tells jobs of one rollout apart.
    item.append(el('a', { href: links.job.replace('{jobId}', job.id) }, 'job …' + job.id.slice(-8)));
    item.append(' ' + job.status + ' on ');
    if (job.agent)
      item.append(el('a', { href: links.agent.replace('{jobAgentId}', job.agent.id) }, job.agent.name));
    else item.append('—');
    item.append(' (' + job.resource + ') ');
    item.append(workflowLink(links, job.releaseId));
    list.append(item);
  }
  return list;
}

function cellOf(
  board: BoardJson,
  cells: Map<string, BoardCellJson>,
  deployment: BoardJson['deployments'][number],
  environment: BoardJson['environments'][number],
): HTMLElement {
  const cell = cells.get(deployment.id + '/' + environment.id);
  if (!cell) return el('td', { class: 'empty' }, '—');
  const td = el('td', {
    class: 'cell',
    'data-deployment': deployment.slug,
    'data-environment': environment.name,
  });
  td.append(...versionLines(cell), stateCounts(cell.states));
  if (cell.waiting.length) td.append(waitingList(cell.waiting));
  if (cell.activeJobs.length) td.append(jobList(board.links, cell.activeJobs));
  return td;
}

const deploymentLink = (board: BoardJson, d: BoardJson['deployments'][number]) =>
  el('a', { href: board.links.deployment.replace('{slug}', encodeURIComponent(d.slug)) }, d.name);

function drawChoices(board: BoardJson, params: URLSearchParams): void {
  const drawn = JSON.stringify(board.choices);
  if (drawn !== choicesDrawn) {
    choicesDrawn = drawn;
    const options = <R extends { name: string }>(id: string, rows: R[], value: (row: R) => string) =>
      select(id).replaceChildren(...rows.map((row) => el('option', { value: value(row) }, row.name)));
    options('f-system', board.choices.systems, (s) => s.slug);
    options('f-deployment', board.choices.deployments, (d) => d.slug);
    options('f-environment', board.choices.environments, (e) => e.name);
  }
  for (const name of FILTERS) {
    const chosen = params.getAll(name);
    for (const option of select('f-' + name).options) option.selected = chosen.includes(option.value);
  }
  if (document.activeElement !== $('q')) input('q').value = params.get('q') || '';
}

function drawVersions(board: BoardJson): void {
  const versions = $('versions');
  versions.replaceChildren();
  for (const d of board.deployments) {
    const v = d.latestVersion;
    const card = el(
      'div',
      { class: 'version', 'data-deployment': d.slug },
      deploymentLink(board, d),
      ' ' + (v ? v.tag : ''),
    );
    if (!v) card.append(el('div', {}, 'no ready version'));
    else {
      card.append(el('div', { class: 'on' }, onLabel(v.tag, v.onTargets, d.targets)));
      const done = d.targets ? Math.round((100 * v.onTargets) / d.targets) : 0;
      // Set through the CSSOM: the page's CSP refuses style attributes (no 'unsafe-inline').
      const fill = el('div', {});
      fill.style.width = done + '%';
      card.append(el('div', { class: 'bar', title: onLabel(v.tag, v.onTargets, d.targets) }, fill));
    }
    versions.append(card);
  }
}

// The levers in force: each hold and skip with who, why and until when; a hold can be deleted here.
function drawLevers(id: string, levers: LeversJson): void {
  const box = $(id);
  box.replaceChildren();
  if (!levers.holds.length && !levers.skips.length) return;
  box.append(el('h3', {}, 'Levers in force'));
  const list = el('ul', {});
  for (const h of levers.holds) {
    const what = h.effect === 'pin' ? 'pin to version ' + h.versionId : h.schedule ? 'freeze' : 'block';
    const until = h.expiresAt ? 'until ' + h.expiresAt : 'until deleted';
    const text = what + ' ' + h.selector + ' ' + until + ' by ' + h.createdBy.name + ': ' + h.reason + ' ';
    const button = el(
      'button',
      { type: 'button', 'data-action': 'unhold', 'data-hold': h.id },
      'Delete hold',
    );
    list.append(el('li', { 'data-hold': h.id }, text, button));
  }
  for (const k of levers.skips) {
    const text =
      'skip of rule ' + k.ruleId + ' for version ' + k.versionId + ' until ' + k.expiresAt + ' by ';
    list.append(el('li', { 'data-skip': k.id }, text + k.createdBy.name + ': ' + k.reason));
  }
  box.append(list);
}

function drawBoard(board: BoardJson, params: URLSearchParams): void {
  $('board').hidden = false;
  $('status').textContent =
    'workspace ' + board.workspaceId + ' · updated ' + new Date().toLocaleTimeString();
  drawChoices(board, params);
  $('shown').textContent =
    board.deployments.length +
    ' of ' +
    board.choices.deployments.length +
    ' deployments × ' +
    board.environments.length +
    ' of ' +
    board.choices.environments.length +
    ' environments';
  const cells = new Map(board.cells.map((c) => [c.deploymentId + '/' + c.environmentId, c]));
  drawVersions(board);
  drawLevers('levers', board.levers);
  const matrix = $('matrix');
  matrix.replaceChildren();
  const head = el('tr', {}, el('th', {}, 'deployment \\ environment'));
  for (const e of board.environments) head.append(el('th', {}, e.name));
  matrix.append(head);
  for (const d of board.deployments) {
    const row = el('tr', {}, el('th', {}, deploymentLink(board, d)));
    for (const e of board.environments) row.append(cellOf(board, cells, d, e));
    matrix.append(row);
  }
}

function table(id: string, headings: string[], rows: HTMLElement[]): void {
  $(id).replaceChildren(el('tr', {}, ...headings.map((h) => el('th', {}, h))), ...rows);
}

/** A table cell of text and elements. */
const tableCell = (...children: (Node | string)[]) => el('td', {}, ...children);
const when = (at: string) => new Date(at).toLocaleString();

function drawDeployment(page: DeploymentPageJson): void {
  $('deployment').hidden = false;
  $('status').textContent = 'workspace ' + page.workspaceId + ' · updated ' + new Date().toLocaleTimeString();
  const d = page.deployment;
  document.title = d.name + ' · Flightdeck';
  $('d-title').textContent = d.name + ' (' + d.slug + ')';
  $('d-summary').textContent =
    number(page.targets) +
    ' targets' +
    (d.systems.length ? ' · systems: ' + d.systems.join(', ') : '') +
    (d.description ? ' · ' + d.description : '');
  drawDeploymentVersions(page);
  drawDeploymentEnvironments(page);
  drawRecentReleases(page);
  drawLevers('d-levers', page.levers);
  drawDora(page.dora);
  drawTimeline(page.timeline);
  deploymentShown = d;
}

function drawDeploymentVersions(page: DeploymentPageJson): void {
  const rows = page.versions.map((v) =>
    el(
      'tr',
      { 'data-version': v.tag },
      tableCell(v.tag),
      tableCell(v.status),
      tableCell(when(v.createdAt)),
      el('td', { class: 'on' }, onLabel(v.tag, v.onTargets, page.targets)),
      tableCell(stateCounts(v.releases)),
    ),
  );
  table('d-versions', ['version', 'status', 'created', 'targets', 'releases'], rows);
}

function drawDeploymentEnvironments(page: DeploymentPageJson): void {
  const rows = page.environments.map((e) => {
    const cell = el('td', { class: 'cell' }, ...versionLines(e));
    return el(
      'tr',
      { 'data-environment': e.name },
      tableCell(e.name),
      cell,
      tableCell(stateCounts(e.states)),
      tableCell(e.waiting.length ? waitingList(e.waiting) : ''),
    );
  });
  table('d-environments', ['environment', 'versions', 'targets by state', 'waiting'], rows);
}

function drawRecentReleases(page: DeploymentPageJson): void {
  const rows = page.recentReleases.map((r) =>
    el(
      'tr',
      { 'data-release': r.id },
      tableCell(when(r.createdAt)),
      tableCell(r.tag),
      tableCell(r.environment),
      tableCell(r.resource),
      tableCell(r.phase),
      tableCell(r.phaseReason || ''),
      tableCell(workflowLink(page.links, r.id)),
      tableCell(...releaseActions(r)),
    ),
  );
  table('d-releases', ['created', 'version', 'environment', 'resource', 'phase', 'reason', '', ''], rows);
}

// The audit trail of the deployment: who changed what, and what the system decided, newest first.
function drawTimeline(timeline: TimelineEventJson[]): void {
  const rows = timeline.map((e) =>
    el(
      'tr',
      { 'data-event': e.action },
      tableCell(when(e.at)),
      tableCell(e.actor.type + ' ' + e.actor.name),
      tableCell(e.action),
      tableCell(e.record.type + ' ' + e.record.id),
      tableCell(eventDetails(e)),
    ),
  );
  table('d-timeline', ['when', 'who', 'what', 'record', 'details'], rows);
}

/** An event's details in a line: its reason, else the move it made, else the fields it wrote. */
function eventDetails(e: TimelineEventJson): string {
  const { reason, from, to } = e.details;
  if (reason) return String(reason);
  return to ? String(from) + ' → ' + String(to) : e.changes.join(', ');
}

const seconds = (s: number | null) =>
  s === null ? '—' : s < 3600 ? Math.round(s / 60) + ' min' : (s / 3600).toFixed(1) + ' h';

// DORA's four keys in a line, and a bar per day of the window: successes stacked under failures.
function drawDora(dora: DoraJson): void {
  const o = dora.overall;
  $('d-dora').textContent =
    number(o.deployments) +
    ' deployments (' +
    o.deploymentsPerDay +
    '/day) · lead time p50 ' +
    seconds(o.leadTimeSeconds.p50) +
    ' · change failure rate ' +
    (o.changeFailureRate === null ? '—' : Math.round(o.changeFailureRate * 1000) / 10 + '%') +
    ' · time to restore p50 ' +
    seconds(o.timeToRestoreSeconds.p50) +
    (o.unrestored ? ' · ' + o.unrestored + ' not restored' : '');
  const most = Math.max(1, ...dora.daily.map((day) => day.succeeded + day.failed));
  const start = Date.parse(dora.window.from.slice(0, 10));
  const bars: SVGRectElement[] = [];
  for (const day of dora.daily) {
    const x = 4 + Math.round((Date.parse(day.day) - start) / 86400000) * 20;
    const ok = Math.round((100 * day.succeeded) / most);
    const bad = Math.round((100 * day.failed) / most);
    if (day.succeeded) bars.push(chartBar(x, 110 - ok, ok, 'succeeded', day));
    if (day.failed) bars.push(chartBar(x, 110 - ok - bad, bad, 'failed', day));
  }
  byId('d-chart', SVGSVGElement).replaceChildren(...bars);
}

const SVG = 'http://www.w3.org/2000/svg';

/** One day's bar of the chart, of its successes or of its failures, with the day's counts as its title. */
function chartBar(
  x: number,
  y: number,
  height: number,
  kind: 'succeeded' | 'failed',
  day: DoraJson['daily'][number],
): SVGRectElement {
  const rect = document.createElementNS(SVG, 'rect');
  const attributes = {
    x,
    y,
    width: 16,
    height,
    class: kind,
    'data-day': day.day,
    ['data-' + kind]: day[kind],
  };
  for (const [name, value] of Object.entries(attributes)) rect.setAttribute(name, String(value));
  const title = document.createElementNS(SVG, 'title');
  title.textContent = day.day + ': ' + day.succeeded + ' succeeded, ' + day.failed + ' failed';
  rect.append(title);
  return rect;
}

// A waiting release's actions: approve its version in its environment, skip a rule that holds it.
function releaseActions(r: RecentReleaseJson): HTMLElement[] {
  if (r.phase !== 'pending') return [];
  const approve = el('button', { type: 'button', 'data-action': 'approve', 'data-release': r.id }, 'Approve');
  const skips = r.holdingRules.map((rule) =>
    el(
      'button',
      {
        type: 'button',
        'data-action': 'skip',
        'data-rule': rule.ruleId,
        'data-version': r.versionId,
        'data-environment': r.environmentId,
        title: rule.reason,
      },
      'Skip ' + rule.kind,
    ),
  );
  return [approve, ...skips];
}

/** What an action answered: the record it wrote, or the problem the API found. */
interface ActionAnswer {
  answer?: { expiresAt?: string };
  problem?: string;
}

async function act(path: string, method: 'POST' | 'DELETE', body?: object): Promise<ActionAnswer> {
  const response = await fetch('/ui/actions/' + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const answer = (await response.json().catch(() => ({}))) as { detail?: string; expiresAt?: string };
  return response.ok ? { answer } : { problem: answer.detail || 'The action answered ' + response.status };
}

/** What an action button did: the problem, or what the page says it did. */
interface ActionOutcome {
  problem?: string;
  done: string;
}

/** The board's actions by their buttons' `data-action`, each with the reason typed on the page. */
const ACTIONS: Record<string, (button: HTMLElement, reason: string) => Promise<ActionOutcome>> = {
  approve: async (button, reason) => {
    const body = { releaseId: button.dataset.release, ...(reason ? { reason } : {}) };
    return { ...(await act('approve', 'POST', body)), done: 'approved' };
  },
  skip: async (button, reason) => {
    const { rule: ruleId, version: versionId, environment: environmentId } = button.dataset;
    const outcome = await act('skips', 'POST', { ruleId, versionId, environmentId, reason });
    return { ...outcome, done: 'skipped until ' + outcome.answer?.expiresAt };
  },
  hold: async (_button, reason) => {
    if (!deploymentShown) return { problem: 'The deployment has not been read yet', done: '' };
    const slug = deploymentShown.slug;
    const body = { selector: 'deployment.slug == ' + JSON.stringify(slug), effect: 'block', reason };
    return { ...(await act('holds', 'POST', body)), done: 'held ' + slug };
  },
  unhold: async (button) => ({
    ...(await act('holds/' + encodeURIComponent(button.dataset.hold ?? ''), 'DELETE')),
    done: 'hold deleted',
  }),
};

// One listener for every action button, since the tables are redrawn every two seconds.
async function onActionClick(event: MouseEvent): Promise<void> {
  const button = event.target instanceof Element ? event.target.closest('button[data-action]') : null;
  if (!(button instanceof HTMLElement)) return;
  const action = ACTIONS[button.dataset.action ?? ''];
  if (!action) return;
  const outcome = await action(button, input('a-reason').value.trim());
  const result = $('action-result');
  result.className = outcome.problem ? 'problem' : '';
  result.textContent = outcome.problem || outcome.done;
  void refresh();
}

const AGENT_KEY = 'That key belongs to a job agent; sign in with a workspace API key.';

// Each refresh draws only if no later one started meanwhile (a filter changed while it read).
let generation = 0;
async function refresh(): Promise<void> {
  clearTimeout(timer);
  const mine = ++generation;
  const params = new URLSearchParams(location.search);
  const url = deploymentPath ? deploymentPath + '/board.json' : '/ui/board.json?' + params;
  const response = await fetch(url, { credentials: 'same-origin' });
  if (mine !== generation) return;
  if (response.status === 401) return showSignIn();
  if (response.status === 403) return showSignIn(AGENT_KEY);
  $('signin').hidden = true;
  $('signout').hidden = false;
  $('board-error').textContent = '';
  if (response.ok) {
    const body: unknown = await response.json();
    if (mine !== generation) return;
    if (deploymentPath) drawDeployment(body as DeploymentPageJson);
    else drawBoard(body as BoardJson, params);
  } else {
    const problem = (await response.json().catch(() => ({}))) as { detail?: string };
    $(deploymentPath ? 'deployment' : 'board').hidden = false;
    $(deploymentPath ? 'd-title' : 'board-error').textContent =
      problem.detail || 'The board answered ' + response.status;
  }
  timer = setTimeout(refresh, 2000);
}

// The filters live in the page's URL: a filtered board can be shared, reloaded and gone back to.
function applyFilters(): void {
  const params = new URLSearchParams();
  for (const name of FILTERS)
    for (const option of select('f-' + name).selectedOptions) params.append(name, option.value);
  const q = input('q').value.trim();
  if (q) params.set('q', q);
  const query = params.toString();
  history.replaceState(null, '', '/ui/' + (query ? '?' + query : ''));
  void refresh();
}

function listenToFilters(): void {
  let typing: number | undefined;
  for (const name of FILTERS) select('f-' + name).addEventListener('change', applyFilters);
  input('q').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(applyFilters, 250);
  });
  $('filters').addEventListener('submit', (event) => {
    event.preventDefault();
    applyFilters();
  });
  $('clear').addEventListener('click', () => {
    for (const name of FILTERS) for (const option of select('f-' + name).options) option.selected = false;
    input('q').value = '';
    applyFilters();
  });
}

function listenToSignIn(): void {
  $('signin').addEventListener('submit', async (event) => {
    event.preventDefault();
    const response = await fetch('/ui/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey: input('key').value }),
    });
    input('key').value = '';
    if (response.ok) return refresh();
    if (response.status === 403) return showSignIn(AGENT_KEY);
    showSignIn(
      response.status === 401 ? 'That API key is not valid.' : 'Sign-in failed (' + response.status + ').',
    );
  });
  $('signout').addEventListener('click', async () => {
    await fetch('/ui/session', { method: 'DELETE' });
    showSignIn('Signed out.');
  });
}

document.addEventListener('click', onActionClick);
listenToFilters();
listenToSignIn();
void refresh();
