/**
 * The rollout board's one page: markup and style of our own, served by the API (no CDN, no
 * framework). What it shows, its script draws: api/ui/browser/board.ts, served compiled as
 * /ui/board.js (api/ui/boardScript.ts), a file of the same origin as the page's CSP wants it.
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
<script type="module" src="/ui/board.js"></script>
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
