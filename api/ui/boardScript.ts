import fs from 'node:fs';
import path from 'node:path';

/**
 * The board's script as the browser runs it, beside this file: its TypeScript source, and the
 * JavaScript `npm run build` compiles from it into dist/ (scripts/build.mjs).
 */
export const BOARD_SCRIPT_SOURCE = path.join('browser', 'board.ts');
export const BOARD_SCRIPT_FILE = path.join('browser', 'board.js');

/**
 * The script compiled for the browser: types stripped, an ES module the page loads with
 * `<script type="module">`. It imports types only, so no bundling is needed. @swc/core is a
 * development dependency, loaded only here: by the build, and by a service run from its sources
 * (tsx, jest), which have it installed.
 */
export async function compileBoardScript(source: string): Promise<string> {
  const swc = await import('@swc/core');
  const { code } = await swc.transformFile(source, {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    isModule: true,
  });
  return code;
}

/**
 * The script the service serves from `directory` (this file's): the prebuilt file when running
 * compiled (dist/ holds it), else compiled from the TypeScript source.
 */
export async function loadBoardScript(directory: string, compiled: boolean): Promise<string> {
  const prebuilt = path.join(directory, BOARD_SCRIPT_FILE);
  if (compiled && fs.existsSync(prebuilt)) return fs.promises.readFile(prebuilt, 'utf8');
  return compileBoardScript(path.join(directory, BOARD_SCRIPT_SOURCE));
}

let script: Promise<string> | undefined;

/** The board's script, loaded or compiled on its first request and kept for the process's life. */
export function boardScript(): Promise<string> {
  script ??= loadBoardScript(__dirname, __filename.endsWith('.js'));
  return script;
}
