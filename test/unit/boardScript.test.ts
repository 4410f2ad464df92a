import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from '@swc/core';
import Koa from 'koa';
import request from 'supertest';
import { uiRouter } from '../../api/routes/ui';
import { BOARD_PAGE } from '../../api/ui/boardPage';
import {
  BOARD_SCRIPT_FILE,
  BOARD_SCRIPT_SOURCE,
  boardScript,
  loadBoardScript,
} from '../../api/ui/boardScript';

/**
 * The rollout board's script (api/ui/browser/board.ts) reaches the browser compiled, from the file
 * the page names, under the page's CSP; test/integration/ui/rolloutBoard.test.ts drives it in Chromium.
 */
const UI = path.join(__dirname, '..', '..', 'api', 'ui');

describe("the rollout board's script", () => {
  it('is loaded by the page as a module file of the same origin, with no inline script or style', () => {
    expect(BOARD_PAGE.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/ui/board.js">']);
    expect(BOARD_PAGE).toMatch(/<script[^>]*><\/script>/);
    expect(BOARD_PAGE).not.toMatch(/\sstyle=|\son[a-z]+=/i);
  });

  it('is the TypeScript module compiled to JavaScript: types stripped, nothing imported', async () => {
    const script = await boardScript();
    expect(script).toMatch(/\bfunction drawDora\(dora\) \{/);
    expect(script).toMatch(/\bfunction drawBoard\(board, params\) \{/);
    // Parsed as plain JavaScript, which no type annotation survives.
    const program = await parse(script, { syntax: 'ecmascript', target: 'es2022' });
    expect(program.body.filter((item) => item.type === 'ImportDeclaration')).toEqual([]);
  });

  it('names only elements the page has', () => {
    // Every id the script names literally, through its getters or the drawers given one.
    const source = fs.readFileSync(path.join(UI, BOARD_SCRIPT_SOURCE), 'utf8');
    const named = [
      ...source.matchAll(/(?<![\w$.])(?:\$|input|select|byId|table|drawLevers)\('([a-z-]+)'[,)]/g),
    ].map((match) => match[1]!);
    expect(named.length).toBeGreaterThan(20);
    const onPage = new Set([...BOARD_PAGE.matchAll(/\sid="([^"]+)"/g)].map((match) => match[1]!));
    expect(named.filter((id) => !onPage.has(id))).toEqual([]);
  });

  it('is served at /ui/board.js as JavaScript, under the same CSP as the page', async () => {
    const app = new Koa().use(uiRouter({}, []).routes());
    const script = await request(app.callback()).get('/ui/board.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.text).toBe(await boardScript());
    const page = await request(app.callback()).get('/ui/');
    expect(page.headers['content-security-policy']).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(script.headers['content-security-policy']).toBe(page.headers['content-security-policy']);
    expect(script.headers['x-content-type-options']).toBe('nosniff');
  });

  it('comes prebuilt from dist/ when the service runs compiled, and from its source otherwise', async () => {
    const dist = fs.mkdtempSync(path.join(os.tmpdir(), 'board-script-'));
    try {
      fs.mkdirSync(path.dirname(path.join(dist, BOARD_SCRIPT_FILE)), { recursive: true });
      fs.writeFileSync(path.join(dist, BOARD_SCRIPT_FILE), 'prebuilt();\n');
      expect(await loadBoardScript(dist, true)).toBe('prebuilt();\n');
    } finally {
      fs.rmSync(dist, { recursive: true, force: true });
    }
    expect(await loadBoardScript(UI, false)).toBe(await boardScript());
  });
});
