/**
 * The rollout board's one page: markup, style and script of our own, served by the API (no CDN,
 * no framework). The script signs in with an API key (the API keeps it in an HttpOnly cookie),
 * then reads /ui/board.json every two seconds and redraws the deployment × environment matrix.
 * Everything shown is inserted as text, never as markup.
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
<header><h1>Flightdeck</h1><span id="status"></span><button id="signout" hidden>Sign out</button></header>
<main>
  <form id="signin" hidden>
    <h2>Sign in</h2>
    <label>API key <input id="key" type="password" autocomplete="off" required></label>
    <button type="submit">Sign in</button>
    <p id="signin-error" role="alert"></p>
  </form>
  <section id="board" hidden>
    <div id="versions"></div>
    <table id="matrix"></table>
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
#status { flex: 1; opacity: .8; }
main { padding: 1.2rem; }
form#signin { max-width: 22rem; background: #fff; padding: 1.2rem; border-radius: 6px; box-shadow: 0 1px 3px #0002; }
form#signin input { display: block; width: 100%; margin: .4rem 0 .8rem; padding: .4rem; box-sizing: border-box; }
#signin-error { color: #b3261e; }
#versions { display: flex; flex-wrap: wrap; gap: .6rem; margin-bottom: 1rem; }
.version { background: #fff; border-radius: 6px; padding: .5rem .8rem; box-shadow: 0 1px 3px #0002; }
.bar { height: 6px; background: #e3e6ea; border-radius: 3px; margin-top: .3rem; overflow: hidden; }
.bar > div { height: 100%; background: #2e7d32; }
table { border-collapse: collapse; background: #fff; box-shadow: 0 1px 3px #0002; }
th, td { border: 1px solid #e3e6ea; padding: .5rem .7rem; vertical-align: top; text-align: left; }
th { background: #eef1f4; }
.cell .tags { font-weight: 600; }
.cell .counts span { display: inline-block; margin-right: .4rem; padding: 0 .35rem; border-radius: 3px; background: #eef1f4; }
.cell .counts .succeeded { background: #d7f0da; } .cell .counts .running { background: #dbe8fb; }
.cell .counts .pending { background: #fdf1cf; } .cell .counts .failed { background: #f9d9d6; }
.cell .waiting { color: #7a5900; margin: .3rem 0 0; padding-left: 1rem; }
.cell .jobs { margin: .3rem 0 0; padding-left: 1rem; }
.empty { color: #8a93a0; }
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
  let timer;

  function showSignIn(message) {
    clearTimeout(timer);
    $('board').hidden = true;
    $('signout').hidden = true;
    $('signin').hidden = false;
    $('signin-error').textContent = message || '';
    $('status').textContent = '';
  }

  function cellOf(board, deployment, environment) {
    const cell = board.cells.find((c) => c.deploymentId === deployment.id && c.environmentId === environment.id);
    if (!cell) return el('td', { class: 'empty' }, '—');
    const tags = (list) => list.map((v) => v.tag + ' (' + v.targets + ')').join(', ') || '—';
    const td = el('td', { class: 'cell', 'data-deployment': deployment.slug, 'data-environment': environment.name });
    td.append(el('div', { class: 'tags' }, 'current: ' + tags(cell.current)));
    td.append(el('div', {}, 'desired: ' + tags(cell.desired)));
    const counts = el('div', { class: 'counts' });
    for (const [state, n] of Object.entries(cell.states)) counts.append(el('span', { class: state }, state + ' ' + n));
    td.append(counts);
    if (cell.waiting.length) {
      const list = el('ul', { class: 'waiting' });
      for (const w of cell.waiting) list.append(el('li', {}, w.reason + (w.releases > 1 ? ' ×' + w.releases : '')));
      td.append(list);
    }
    if (cell.activeJobs.length) {
      const list = el('ul', { class: 'jobs' });
      for (const job of cell.activeJobs) {
        const item = el('li', {});
        // Ids are time-ordered (UUIDv7): their end tells jobs of one rollout apart.
        item.append(el('a', { href: board.links.job.replace('{jobId}', job.id) }, 'job …' + job.id.slice(-8)));
        item.append(' ' + job.status + ' on ');
        if (job.agent) item.append(el('a', { href: board.links.agent.replace('{jobAgentId}', job.agent.id) }, job.agent.name));
        else item.append('—');
        item.append(' (' + job.resource + ') ');
        if (board.links.releaseWorkflow)
          item.append(el('a', { href: board.links.releaseWorkflow.replace('{releaseId}', job.releaseId) }, 'workflow'));
        list.append(item);
      }
      td.append(list);
    }
    return td;
  }

  function draw(board) {
    $('signin').hidden = true;
    $('board').hidden = false;
    $('signout').hidden = false;
    $('status').textContent = 'workspace ' + board.workspaceId + ' · updated ' + new Date().toLocaleTimeString();
    const versions = $('versions');
    versions.replaceChildren();
    for (const d of board.deployments) {
      const v = d.latestVersion;
      const total = board.cells.filter((c) => c.deploymentId === d.id).reduce((n, c) => n + c.targets, 0);
      const card = el('div', { class: 'version' }, d.name + ': ' + (v ? v.tag + ' ' + (v.rolloutStatus || '') : 'no ready version'));
      if (v) {
        const done = total ? Math.min(100, Math.round((100 * v.releaseCount) / total)) : 0;
        const bar = el('div', { class: 'bar', title: v.releaseCount + ' of ' + total + ' targets' }, el('div', { style: 'width:' + done + '%' }));
        card.append(bar);
      }
      versions.append(card);
    }
    const matrix = $('matrix');
    matrix.replaceChildren();
    const head = el('tr', {}, el('th', {}, 'deployment \\\\ environment'));
    for (const e of board.environments) head.append(el('th', {}, e.name));
    matrix.append(head);
    for (const d of board.deployments) {
      const row = el('tr', {}, el('th', {}, d.name));
      for (const e of board.environments) row.append(cellOf(board, d, e));
      matrix.append(row);
    }
  }

  const AGENT_KEY = 'That key belongs to a job agent; sign in with a workspace API key.';

  async function refresh() {
    const response = await fetch('/ui/board.json', { credentials: 'same-origin' });
    if (response.status === 401) return showSignIn();
    if (response.status === 403) return showSignIn(AGENT_KEY);
    if (response.ok) draw(await response.json());
    timer = setTimeout(refresh, 2000);
  }

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
