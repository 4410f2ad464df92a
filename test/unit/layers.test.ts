import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * The layer rules of eslint.config.mjs (ARCHITECTURE.md, "Layers") reject what they are for: a
 * source given to ESLint as if it were a file of that layer.
 */
const ROOT = path.join(__dirname, '..', '..');
const ESLINT = path.join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');

/** The rules ESLint reports on `source` as the file `file`. */
function lintAs(file: string, source: string): string[] {
  let output: string;
  try {
    output = execFileSync(
      process.execPath,
      [ESLINT, '--stdin', '--stdin-filename', file, '--format', 'json'],
      {
        cwd: ROOT,
        input: source,
        encoding: 'utf8',
      },
    );
  } catch (error) {
    // Exit status 1: the source has lint errors, reported on stdout. Anything else is ESLint failing.
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    if (failed.status !== 1 || !failed.stdout)
      throw new Error(`eslint failed: ${failed.stderr ?? String(error)}`);
    output = failed.stdout;
  }
  const [result] = JSON.parse(output) as { messages: { ruleId: string | null; message: string }[] }[];
  return result!.messages.map((message) => message.ruleId ?? message.message);
}

describe('layer rules', () => {
  it('reject SQL helpers and SQL calls in activities/, and let an EntityManager pass through as a type', () => {
    expect(
      lintAs(
        'activities/release.ts',
        "import { raw } from '@mikro-orm/core';\nexport const sql = raw('now()');\n",
      ),
    ).toEqual(['no-restricted-imports']);
    expect(
      lintAs(
        'activities/release.ts',
        "import type { EntityManager } from '@mikro-orm/postgresql';\nexport const run = (em: EntityManager) => em.execute('SELECT 1');\n",
      ),
    ).toEqual(['no-restricted-syntax']);
  });

  it('reject I/O and other layers in domain/', () => {
    expect(
      lintAs(
        'domain/gates.ts',
        "import { readFileSync } from 'node:fs';\nimport { Database } from '../db/database';\nexport const read = () => [readFileSync('x'), Database];\n",
      ),
    ).toEqual(['no-restricted-imports', 'no-restricted-imports']);
    expect(lintAs('domain/gates.ts', "import { z } from 'zod';\nexport const id = z.string();\n")).toEqual(
      [],
    );
  });

  it('keep db/ below the engine and the application: the application calls both, neither calls it', () => {
    const callsEngine =
      "import { finishRelease } from '../engine/executor';\nexport const finish = finishRelease;\n";
    expect(lintAs('db/outbox.ts', callsEngine)).toEqual(['no-restricted-imports']);
    expect(lintAs('application/versions.ts', callsEngine)).toEqual([]);
    const callsStore = (from: string) =>
      `import { VersionStore } from '${from}/application/versions';\nexport const store = VersionStore;\n`;
    expect(lintAs('engine/executor/releaseFanout.ts', callsStore('../..'))).toEqual([
      'no-restricted-imports',
    ]);
    expect(lintAs('db/outbox.ts', callsStore('..'))).toEqual(['no-restricted-imports']);
  });

  it('let the engine and activities name what activities answer the workflows from domain/, and import nothing of workflows/', () => {
    const answer =
      "import type { StartJobsResult } from '../../domain/activityResults';\nexport type Answer = StartJobsResult;\n";
    expect(lintAs('engine/executor/jobCreation.ts', answer)).toEqual([]);
    expect(lintAs('activities/agents/dispatcher.ts', answer)).toEqual([]);
    const fromWorkflows =
      "import type { ReleaseInput } from '../../workflows/release';\nexport type Input = ReleaseInput;\n";
    expect(lintAs('engine/executor/jobCreation.ts', fromWorkflows)).toEqual(['no-restricted-imports']);
    expect(lintAs('activities/agents/dispatcher.ts', fromWorkflows)).toEqual(['no-restricted-imports']);
    expect(
      lintAs(
        'engine/executor/jobCreation.ts',
        "import { workflowIds } from '../../workflows/ids';\nexport const ids = workflowIds;\n",
      ),
    ).toEqual(['no-restricted-imports']);
  });

  it("let code outside the engine import a room's index only, and a room only the rooms below it", () => {
    const deep =
      "import { applyHold } from '../engine/executor/holdEffects';\nexport const hold = applyHold;\n";
    const frontDoor = "import { applyHold } from '../engine/executor';\nexport const hold = applyHold;\n";
    expect(lintAs('application/holds.ts', deep)).toEqual(['no-restricted-imports']);
    expect(lintAs('application/holds.ts', frontDoor)).toEqual([]);
    expect(lintAs('test/unit/holds.test.ts', deep.replace("'../", "'../../"))).toEqual([
      'no-restricted-imports',
    ]);
    const explainFromPlanner =
      "import { explainReleaseTarget } from '../explain';\nexport const explain = explainReleaseTarget;\n";
    expect(lintAs('engine/planner/targetVariables.ts', explainFromPlanner)).toEqual([
      'no-restricted-imports',
    ]);
    expect(lintAs('engine/executor/releaseFanout.ts', explainFromPlanner)).toEqual([]);
    const fromRoomFolder = (room: string) =>
      `import * as room from '../../${room}';\nexport const imported = room;\n`;
    expect(lintAs('engine/eligibility/facts/approvals.ts', fromRoomFolder('planner'))).toEqual([
      'no-restricted-imports',
    ]);
    expect(lintAs('engine/eligibility/facts/approvals.ts', fromRoomFolder('selectors'))).toEqual([]);
  });

  it("let the board's browser script import types alone, and nothing of Node", () => {
    const board = 'api/ui/browser/board.ts';
    expect(
      lintAs(
        board,
        "import type { BoardJson } from '../../../domain/boardJson';\nexport type Board = BoardJson;\n",
      ),
    ).toEqual([]);
    expect(
      lintAs(
        board,
        "import { readFileSync } from 'node:fs';\nexport const read = () => readFileSync('x');\n",
      ),
    ).toEqual(['no-restricted-imports', 'no-restricted-syntax']);
    expect(
      lintAs(board, "import path from 'path';\nexport const join = (a: string) => path.join(a);\n"),
    ).toEqual(['no-restricted-imports', 'no-restricted-syntax']);
    expect(
      lintAs(board, "import { BOARD_PAGE } from '../boardPage';\nexport const page = BOARD_PAGE;\n"),
    ).toEqual(['no-restricted-syntax']);
  });
});
