/**
 * The rollout board's one page: markup, style and script of our own, served by the API (no CDN,
 * no framework). The script signs in with an API key (the API opens a session, whose id it keeps
 * in an HttpOnly cookie), then reads /ui/board.json every two seconds and redraws the deployment ×
 * environment matrix, narrowed by the filters and search the page's URL carries; at
 * /ui/deployments/{slug} it draws that deployment's page from /ui/deployments/{slug}/board.json
 * instead. Both list the levers in force (holds, skips: who, why, until when); a deployment's page
 * approves and skips its waiting releases and holds the deployment, through /ui/actions as the
 * signed-in key. Everything shown is inserted as text, never as markup.
 */
export const BOARD_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Flightdeck rollout board</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/ui/board.css">
</head>
<body>
<header><h1><a href="/ui/">Flightdeck</a></h1><span id="status"></span><button id="signout" hidden>Sign out</button></header>
<main>
  <p id="action-result" role="status"></p>
  <form id="signin" hidden>
    <h2>Sign in</h2>
    <label>API key <input id="key" type="password" autocomplete="off" required></label>
    <button type="submit">Sign in</button>
    <p id="signin-error" role="alert"></p>
  </form>
  <section id="board" hidden>
    <form id="filters">
      <label>System <select id="f-system" name="system" multiple size="4"></select></label>
      <label>Deployment <select id="f-deployment" name="deployment" multiple size="4"></select></label>
      <label>Environment <select id="f-environment" name="environment" multiple size="4"></select></label>
      <label>Search <input id="q" name="q" type="search" maxlength="100" placeholder="deployment or environment"></label>
      <button id="clear" type="button">Clear</button>
      <p id="shown"></p>
    </form>
    <p id="board-error" role="alert"></p>
    <div id="versions"></div>
    <div class="levers" id="levers"></div>
    <table id="matrix"></table>
  </section>
  <section id="deployment" hidden>
    <p><a href="/ui/">← all deployments</a></p>
    <h2 id="d-title"></h2>
    <p id="d-summary"></p>
    <form id="actions">
      <label>Reason <input id="a-reason" maxlength="2000" placeholder="why: recorded with your key"></label>
      <button id="a-hold" type="button" data-action="hold">Hold this deployment</button>
    </form>
    <div class="levers" id="d-levers"></div>
    <h3>Versions</h3>
    <table id="d-versions"></table>
    <h3>Targets by environment and state</h3>
    <table id="d-environments"></table>
    <h3>Recent releases</h3>
    <table id="d-releases"></table>
    <h3>Delivery, last 30 days</h3>
    <p id="d-dora"></p>
    <svg id="d-chart" width="620" height="120" role="img" aria-label="releases ended per day"></svg>
    <h3>Timeline</h3>
    <table id="d-timeline"></table>
  </section>
</main>
<script src="/ui/board.js"></script>
</body>
</html>
`;

export const BOARD_STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2430; background: #f6f7f9; }
header { display: flex; align-items: center; gap: 1rem; padding: .6rem 1.2rem; background: #1d2430; color: #fff; }
header h1 { font-size: 1.1rem; margin: 0; }
header h1 a { color: inherit; text-decoration: none; }
#status { flex: 1; opacity: .8; }
main { padding: 1.2rem; }
form#signin { max-width: 22rem; background: #fff; padding: 1.2rem; border-radius: 6px; box-shadow: 0 1px 3px #0002; }
form#signin input { display: block; width: 100%; margin: .4rem 0 .8rem; padding: .4rem; box-sizing: border-box; }
#signin-error, #board-error { color: #b3261e; }
form#filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .8rem; margin-bottom: 1rem; }
form#filters label { display: flex; flex-direction: column; gap: .2rem; font-weight: 600; }
form#filters select { min-width: 12rem; font-weight: normal; }
form#filters input { padding: .3rem; min-width: 14rem; font-weight: normal; }
#shown { color: #5a6472; margin: 0; }
#versions { display: flex; flex-wrap: wrap; gap: .6rem; margin-bottom: 1rem; }
.version { background: #fff; border-radius: 6px; padding: .5rem .8rem; box-shadow: 0 1px 3px #0002; }
.bar { height: 6px; background: #e3e6ea; border-radius: 3px; margin-top: .3rem; overflow: hidden; }
.bar > div { height: 100%; background: #2e7d32; }
table { border-collapse: collapse; background: #fff; box-shadow: 0 1px 3px #0002; margin-bottom: 1rem; }
th, td { border: 1px solid #e3e6ea; padding: .5rem .7rem; vertical-align: top; text-align: left; }
th { background: #eef1f4; }
.cell .on { font-weight: 600; }
.counts span { display: inline-block; margin-right: .4rem; padding: 0 .35rem; border-radius: 3px; background: #eef1f4; }
.counts .succeeded { background: #d7f0da; } .counts .running { background: #dbe8fb; }
.counts .pending { background: #fdf1cf; } .counts .failed { background: #f9d9d6; }
.waiting { color: #7a5900; margin: .3rem 0 0; padding-left: 1rem; }
.jobs { margin: .3rem 0 0; padding-left: 1rem; }
.empty { color: #8a93a0; }
.levers ul { margin: .3rem 0 1rem; padding-left: 1rem; }
#d-chart { background: #fff; box-shadow: 0 1px 3px #0002; }
#d-chart .succeeded { fill: #2e7d32; } #d-chart .failed { fill: #b3261e; }
form#actions { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .8rem; margin-bottom: 1rem; }
form#actions input { padding: .3rem; min-width: 22rem; }
#action-result { margin: 0 0 .6rem; color: #1b5e20; }
#action-result.problem { color: #b3261e; }
td button, .levers button { margin: 0 .3rem .2rem 0; }
`;

export const BOARD_SCRIPT = `
(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    for (const child of children) node.append(child);
    return node;
  };
  const number = (n) => n.toLocaleString('en-US');
  const FILTERS = ['system', 'deployment', 'environment'];
  // A deployment's page (/ui/deployments/{slug}) reads that deployment's board.
  const deploymentPath = location.pathname.startsWith('/ui/deployments/') ? location.pathname.replace(/[/]+$/, '') : null;
  let timer;
  let choicesDrawn = '';

  function showSignIn(message) {
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
  const onLabel = (tag, n, of) => 'on ' + tag + ': ' + number(n) + ' of ' + number(of);

  function versionLines(cell) {
    const lines = cell.current.map((v) => el('div', { class: 'on' }, onLabel(v.tag, v.targets, cell.targets)));
    const running = cell.current.reduce((n, v) => n + v.targets, 0);
    if (running < cell.targets)
      lines.push(el('div', { class: 'on' }, 'no version yet: ' + number(cell.targets - running) + ' of ' + number(cell.targets)));
    for (const v of cell.desired) {
      const on = cell.current.find((c) => c.tag === v.tag);
      if (!on || on.targets < v.targets) lines.push(el('div', {}, 'headed to ' + v.tag + ': ' + number(v.targets - (on ? on.targets : 0))));
    }
    return lines;
  }

  function stateCounts(states) {
    const counts = el('div', { class: 'counts' });
    for (const [state, n] of Object.entries(states)) counts.append(el('span', { class: state }, state + ' ' + number(n)));
    return counts;
  }

  function waitingList(waiting) {
    const list = el('ul', { class: 'waiting' });
    for (const w of waiting) list.append(el('li', {}, w.reason + (w.releases > 1 ? ' ×' + w.releases : '')));
    return list;
  }

  function workflowLink(links, releaseId) {
    return links.releaseWorkflow ? el('a', { href: links.releaseWorkflow.replace('{releaseId}', releaseId) }, 'workflow') : '';
  }

  function jobList(links, jobs) {
    const list = el('ul', { class: 'jobs' });
    for (const job of jobs) {
      const item = el('li', {});
      // Ids are time-ordered (UUIDv7): their end tells jobs of one rollout apart.
      item.append(el('a', { href: links.job.replace('{jobId}', job.id) }, 'job …' + job.id.slice(-8)));
      item.append(' ' + job.status + ' on ');
      if (job.agent) item.append(el('a', { href: links.agent.replace('{jobAgentId}', job.agent.id) }, job.agent.name));
      else item.append('—');
      item.append(' (' + job.resource + ') ');
      item.append(workflowLink(links, job.releaseId));
      list.append(item);
    }
    return list;
  }

  function cellOf(board, cells, deployment, environment) {
    const cell = cells.get(deployment.id + '/' + environment.id);
    if (!cell) return el('td', { class: 'empty' }, '—');
    const td = el('td', { class: 'cell', 'data-deployment': deployment.slug, 'data-environment': environment.name });
    td.append(...versionLines(cell), stateCounts(cell.states));
    if (cell.waiting.length) td.append(waitingList(cell.waiting));
    if (cell.activeJobs.length) td.append(jobList(board.links, cell.activeJobs));
    return td;
  }

  const deploymentLink = (board, d) => el('a', { href: board.links.deployment.replace('{slug}', encodeURIComponent(d.slug)) }, d.name);

  function drawChoices(board, params) {
    const drawn = JSON.stringify(board.choices);
    if (drawn !== choicesDrawn) {
      choicesDrawn = drawn;
      const options = (id, rows, value) =>
        $(id).replaceChildren(...rows.map((row) => el('option', { value: value(row) }, row.name)));
      options('f-system', board.choices.systems, (s) => s.slug);
      options('f-deployment', board.choices.deployments, (d) => d.slug);
      options('f-environment', board.choices.environments, (e) => e.name);
    }
    for (const name of FILTERS) {
      const chosen = params.getAll(name);
      for (const option of $('f-' + name).options) option.selected = chosen.includes(option.value);
    }
    if (document.activeElement !== $('q')) $('q').value = params.get('q') || '';
  }

  function drawVersions(board) {
    const versions = $('versions');
    versions.replaceChildren();
    for (const d of board.deployments) {
      const v = d.latestVersion;
      const card = el('div', { class: 'version', 'data-deployment': d.slug }, deploymentLink(board, d), ' ' + (v ? v.tag : ''));
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
  function drawLevers(id, levers) {
    const box = $(id);
    box.replaceChildren();
    if (!levers.holds.length && !levers.skips.length) return;
    box.append(el('h3', {}, 'Levers in force'));
    const list = el('ul', {});
    for (const h of levers.holds) {
      const what = h.effect === 'pin' ? 'pin to version ' + h.versionId : h.schedule ? 'freeze' : 'block';
      const until = h.expiresAt ? 'until ' + h.expiresAt : 'until deleted';
      list.append(el('li', { 'data-hold': h.id }, what + ' ' + h.selector + ' ' + until + ' by ' + h.createdBy.name + ': ' + h.reason + ' ',
        el('button', { type: 'button', 'data-action': 'unhold', 'data-hold': h.id }, 'Delete hold')));
    }
    for (const k of levers.skips)
      list.append(el('li', { 'data-skip': k.id }, 'skip of rule ' + k.ruleId + ' for version ' + k.versionId + ' until ' + k.expiresAt + ' by ' + k.createdBy.name + ': ' + k.reason));
    box.append(list);
  }

  function draw(board, params) {
    $('board').hidden = false;
    $('status').textContent = 'workspace ' + board.workspaceId + ' · updated ' + new Date().toLocaleTimeString();
    drawChoices(board, params);
    $('shown').textContent =
      board.deployments.length + ' of ' + board.choices.deployments.length + ' deployments × ' +
      board.environments.length + ' of ' + board.choices.environments.length + ' environments';
    const cells = new Map(board.cells.map((c) => [c.deploymentId + '/' + c.environmentId, c]));
    drawVersions(board);
    drawLevers('levers', board.levers);
    const matrix = $('matrix');
    matrix.replaceChildren();
    const head = el('tr', {}, el('th', {}, 'deployment \\\\ environment'));
    for (const e of board.environments) head.append(el('th', {}, e.name));
    matrix.append(head);
    for (const d of board.deployments) {
      const row = el('tr', {}, el('th', {}, deploymentLink(board, d)));
      for (const e of board.environments) row.append(cellOf(board, cells, d, e));
      matrix.append(row);
    }
  }

  function table(id, headings, rows) {
    $(id).replaceChildren(el('tr', {}, ...headings.map((h) => el('th', {}, h))), ...rows);
  }

  function drawDeployment(page) {
    $('deployment').hidden = false;
    $('status').textContent = 'workspace ' + page.workspaceId + ' · updated ' + new Date().toLocaleTimeString();
    const d = page.deployment;
    document.title = d.name + ' · Flightdeck';
    $('d-title').textContent = d.name + ' (' + d.slug + ')';
    $('d-summary').textContent =
      number(page.targets) + ' targets' + (d.systems.length ? ' · systems: ' + d.systems.join(', ') : '') + (d.description ? ' · ' + d.description : '');
    table('d-versions', ['version', 'status', 'created', 'targets', 'releases'],
      page.versions.map((v) =>
        el('tr', { 'data-version': v.tag }, el('td', {}, v.tag), el('td', {}, v.status),
          el('td', {}, new Date(v.createdAt).toLocaleString()), el('td', { class: 'on' }, onLabel(v.tag, v.onTargets, page.targets)),
          el('td', {}, stateCounts(v.releases)))));
    table('d-environments', ['environment', 'versions', 'targets by state', 'waiting'],
      page.environments.map((e) => {
        const cell = el('td', { class: 'cell' }, ...versionLines(e));
        return el('tr', { 'data-environment': e.name }, el('td', {}, e.name), cell, el('td', {}, stateCounts(e.states)),
          el('td', {}, e.waiting.length ? waitingList(e.waiting) : ''));
      }));
    table('d-releases', ['created', 'version', 'environment', 'resource', 'phase', 'reason', '', ''],
      page.recentReleases.map((r) =>
        el('tr', { 'data-release': r.id }, el('td', {}, new Date(r.createdAt).toLocaleString()), el('td', {}, r.tag),
          el('td', {}, r.environment), el('td', {}, r.resource), el('td', {}, r.phase), el('td', {}, r.phaseReason || ''),
          el('td', {}, workflowLink(page.links, r.id)), el('td', {}, ...releaseActions(r)))));
    drawLevers('d-levers', page.levers);
    drawDora(page.dora);
    // The audit trail of the deployment: who changed what, and what the system decided, newest first.
    table('d-timeline', ['when', 'who', 'what', 'record', 'details'],
      page.timeline.map((e) =>
        el('tr', { 'data-event': e.action }, el('td', {}, new Date(e.at).toLocaleString()),
          el('td', {}, e.actor.type + ' ' + e.actor.name), el('td', {}, e.action), el('td', {}, e.record.type + ' ' + e.record.id),
          el('td', {}, e.details.reason || (e.details.to ? e.details.from + ' → ' + e.details.to : e.changes.join(', '))))));
    deploymentShown = d;
  }

  const seconds = (s) => (s === null ? '—' : s < 3600 ? Math.round(s / 60) + ' min' : (s / 3600).toFixed(1) + ' h');

  // DORA's four keys in a line, and a bar per day of the window: successes stacked under failures.
  function drawDora(dora) {
    const o = dora.overall;
    $('d-dora').textContent =
      number(o.deployments) + ' deployments (' + o.deploymentsPerDay + '/day) · lead time p50 ' + seconds(o.leadTimeSeconds.p50) +
      ' · change failure rate ' + (o.changeFailureRate === null ? '—' : Math.round(o.changeFailureRate * 1000) / 10 + '%') +
      ' · time to restore p50 ' + seconds(o.timeToRestoreSeconds.p50) + (o.unrestored ? ' · ' + o.unrestored + ' not restored' : '');
    const svg = $('d-chart');
    const ns = 'http://www.w3.org/2000/svg';
    const bar = (x, y, height, kind, day) => {
      const rect = document.createElementNS(ns, 'rect');
      for (const [name, value] of Object.entries({ x, y, width: 16, height, class: kind, 'data-day': day.day, ['data-' + kind]: day[kind] }))
        rect.setAttribute(name, String(value));
      const title = document.createElementNS(ns, 'title');
      title.textContent = day.day + ': ' + day.succeeded + ' succeeded, ' + day.failed + ' failed';
      rect.append(title);
      return rect;
    };
    const most = Math.max(1, ...dora.daily.map((day) => day.succeeded + day.failed));
    const start = Date.parse(dora.window.from.slice(0, 10));
    const bars = [];
    for (const day of dora.daily) {
      const x = 4 + Math.round((Date.parse(day.day) - start) / 86400000) * 20;
      const ok = Math.round((100 * day.succeeded) / most);
      const bad = Math.round((100 * day.failed) / most);
      if (day.succeeded) bars.push(bar(x, 110 - ok, ok, 'succeeded', day));
      if (day.failed) bars.push(bar(x, 110 - ok - bad, bad, 'failed', day));
    }
    svg.replaceChildren(...bars);
  }

  // A waiting release's actions: approve its version in its environment, skip a rule that holds it.
  function releaseActions(r) {
    if (r.phase !== 'pending') return [];
    const approve = el('button', { type: 'button', 'data-action': 'approve', 'data-release': r.id }, 'Approve');
    return [approve, ...r.holdingRules.map((rule) =>
      el('button', { type: 'button', 'data-action': 'skip', 'data-rule': rule.ruleId, 'data-version': r.versionId,
        'data-environment': r.environmentId, title: rule.reason }, 'Skip ' + rule.kind))];
  }

  let deploymentShown = null;

  async function act(path, method, body) {
    const response = await fetch('/ui/actions/' + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    const answer = await response.json().catch(() => ({}));
    return response.ok ? { answer } : { problem: answer.detail || 'The action answered ' + response.status };
  }

  // One listener for every action button, since the tables are redrawn every two seconds.
  document.addEventListener('click', async (event) => {
    const button = event.target.closest && event.target.closest('button[data-action]');
    if (!button) return;
    const reason = $('a-reason') ? $('a-reason').value.trim() : '';
    const kind = button.dataset.action;
    const outcome =
      kind === 'approve' ? await act('approve', 'POST', { releaseId: button.dataset.release, ...(reason ? { reason } : {}) }).then((o) => ({ ...o, done: 'approved' }))
      : kind === 'skip' ? await act('skips', 'POST', { ruleId: button.dataset.rule, versionId: button.dataset.version, environmentId: button.dataset.environment, reason }).then((o) => ({ ...o, done: 'skipped until ' + (o.answer && o.answer.expiresAt) }))
      : kind === 'hold' ? await act('holds', 'POST', { selector: 'deployment.slug == ' + JSON.stringify(deploymentShown.slug), effect: 'block', reason }).then((o) => ({ ...o, done: 'held ' + deploymentShown.slug }))
      : await act('holds/' + encodeURIComponent(button.dataset.hold), 'DELETE').then((o) => ({ ...o, done: 'hold deleted' }));
    const result = $('action-result');
    result.className = outcome.problem ? 'problem' : '';
    result.textContent = outcome.problem || outcome.done;
    refresh();
  });

  const AGENT_KEY = 'That key belongs to a job agent; sign in with a workspace API key.';

  // Each refresh draws only if no later one started meanwhile (a filter changed while it read).
  let generation = 0;
  async function refresh() {
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
      const body = await response.json();
      if (mine !== generation) return;
      if (deploymentPath) drawDeployment(body);
      else draw(body, params);
    } else {
      const problem = await response.json().catch(() => ({}));
      $(deploymentPath ? 'deployment' : 'board').hidden = false;
      $(deploymentPath ? 'd-title' : 'board-error').textContent = problem.detail || 'The board answered ' + response.status;
    }
    timer = setTimeout(refresh, 2000);
  }

  // The filters live in the page's URL: a filtered board can be shared, reloaded and gone back to.
  function applyFilters() {
    const params = new URLSearchParams();
    for (const name of FILTERS) for (const option of $('f-' + name).selectedOptions) params.append(name, option.value);
    const q = $('q').value.trim();
    if (q) params.set('q', q);
    const query = params.toString();
    history.replaceState(null, '', '/ui/' + (query ? '?' + query : ''));
    refresh();
  }

  let typing;
  for (const name of FILTERS) $('f-' + name).addEventListener('change', applyFilters);
  $('q').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(applyFilters, 250);
  });
  $('filters').addEventListener('submit', (event) => {
    event.preventDefault();
    applyFilters();
  });
  $('clear').addEventListener('click', () => {
    for (const name of FILTERS) for (const option of $('f-' + name).options) option.selected = false;
    $('q').value = '';
    applyFilters();
  });

  $('signin').addEventListener('submit', async (event) => {
    event.preventDefault();
    const response = await fetch('/ui/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiKey: $('key').value }),
    });
    $('key').value = '';
    if (response.ok) return refresh();
    if (response.status === 403) return showSignIn(AGENT_KEY);
    showSignIn(response.status === 401 ? 'That API key is not valid.' : 'Sign-in failed (' + response.status + ').');
  });
  $('signout').addEventListener('click', async () => {
    await fetch('/ui/session', { method: 'DELETE' });
    showSignIn('Signed out.');
  });
  refresh();
})();
`;
