import { builtinModules } from 'node:module';
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** Modules that reach the outside world: files, network, processes, databases, Temporal's client. */
const DATABASE_MODULES = ['@mikro-orm/*', 'pg', 'knex'];
const IO_MODULES = [
  ...DATABASE_MODULES,
  'node:fs',
  'node:fs/*',
  'fs',
  'node:net',
  'node:http',
  'node:https',
  'node:child_process',
  'child_process',
  '@temporalio/client',
  '@temporalio/worker',
  'koa',
  'pino',
];

/**
 * Node's modules by their bare names, anchored: a pattern `domain` would also match our own domain/
 * folder (the board's script takes its JSON types from there), `/domain` only the module.
 */
const NODE_BUILTINS = builtinModules.map((name) => `/${name}`);

const BROWSER =
  "The board's script runs in the browser and is compiled alone, without bundling: `import type` only, nothing of Node.";

/** Import patterns for other layers' directories, however deep the importing file is. */
function layers(...names) {
  return names.flatMap((name) => [
    `../${name}`,
    `../${name}/*`,
    `../../${name}`,
    `../../${name}/*`,
    `../../../${name}/*`,
  ]);
}

const API_MESSAGE = 'api/ adapts HTTP to db/ and domain/: no activities, worker, workflows or CLI.';
const API_FORBIDDEN = layers('activities', 'worker', 'workflows', 'cli');

/**
 * Deep imports into the engine's rooms from outside it: every room answers through its index
 * (ARCHITECTURE.md, "The engine's rooms").
 */
const ENGINE_FILES = [1, 2, 3, 4].map((depth) => `${'../'.repeat(depth)}engine/*/*`);
const ENGINE_FRONT_DOOR = {
  group: ENGINE_FILES,
  message: 'Import an engine room through its index (engine/<room>), not its files.',
};

/**
 * The engine's rooms, lowest first: a room imports only rooms before it, so decisions flow one
 * way (ARCHITECTURE.md, "The engine's rooms").
 */
const ENGINE_ROOMS = [
  'metrics',
  'selectors',
  'targets',
  'eligibility',
  'planner',
  'explain',
  'executor',
  'jobMoves',
];

function engineRoomOrder(forbidden, message) {
  return ENGINE_ROOMS.map((room, rank) => {
    // From a room's file, or from a file of a folder inside the room (engine/eligibility/facts/).
    const later = ENGINE_ROOMS.slice(rank + 1).flatMap((name) => [
      `../${name}`,
      `../${name}/*`,
      `../../${name}`,
      `../../${name}/*`,
    ]);
    const patterns = [{ group: forbidden, message }];
    if (later.length > 0)
      patterns.push({
        group: later,
        message: `engine/${room} may import only the rooms before it (${ENGINE_ROOMS.slice(0, rank).join(', ') || 'none'}).`,
      });
    return { files: [`engine/${room}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
  });
}

/**
 * A directory's import rule: `forbidden` never, `typesOnly` for types alone (erased at build, so
 * they carry no dependency at run time); `extra` rules beside it.
 */
function layer(files, message, forbidden, typesOnly = [], extra = {}, ignores = []) {
  const patterns = [{ group: forbidden, message }];
  if (typesOnly.length > 0) patterns.push({ group: typesOnly, message, allowTypeImports: true });
  if (!files.startsWith('engine/')) patterns.push(ENGINE_FRONT_DOOR);
  return { files: [files], ignores, rules: { 'no-restricted-imports': ['error', { patterns }], ...extra } };
}

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', '.flightdeck/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Temporal and Koa code is all promises: an unawaited one is a lost error or a race.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  // The layers of ARCHITECTURE.md ("Layers"): what each directory may import.
  layer('domain/**/*.ts', 'domain/ is pure: rules and types, no I/O and no other layer.', [
    ...IO_MODULES,
    ...layers('db', 'application', 'engine', 'api', 'activities', 'worker', 'workflows', 'cli'),
  ]),
  layer(
    'workflows/**/*.ts',
    'Workflows are replayed: only domain/ and types, no I/O, clocks or randomness.',
    [...IO_MODULES, 'node:*', ...layers('db', 'application', 'engine', 'api', 'worker', 'cli')],
    ['../activities', '../activities/*'],
  ),
  layer(
    'activities/**/*.ts',
    "Activities call engine/ and db/ functions and remote services: no SQL or ORM of their own (an EntityManager passes through as a type), no API, worker, workflows or CLI (their answers' types are in domain/activityResults.ts).",
    layers('api', 'worker', 'workflows', 'cli'),
    DATABASE_MODULES,
    {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            'CallExpression[callee.property.name=/^(execute|createQueryBuilder|getKnex|nativeUpdate|nativeDelete|nativeInsert)$/]',
          message: 'SQL belongs in engine/ or db/: call their function instead.',
        },
      ],
    },
  ),
  layer(
    'db/**/*.ts',
    'db/ persists: no application, engine, HTTP, activities, worker, workflows or CLI.',
    layers('application', 'engine', 'api', 'activities', 'worker', 'workflows', 'cli'),
  ),
  layer(
    'application/**/*.ts',
    'application/ holds what the API calls (stores over db/, the engine and domain/): no HTTP, activities, worker, workflows or CLI.',
    layers('api', 'activities', 'worker', 'workflows', 'cli'),
  ),
  ...engineRoomOrder(
    layers('application', 'api', 'activities', 'worker', 'workflows', 'cli'),
    'engine/ decides and writes through db/: no application, HTTP, activities, worker, workflows or CLI (the answers activities pass on are typed in domain/activityResults.ts).',
  ),
  layer('api/**/*.ts', API_MESSAGE, API_FORBIDDEN),
  layer('worker/**/*.ts', 'worker/ bootstraps Temporal workers: no HTTP or CLI.', [...layers('api', 'cli')]),
  // The board's script runs in the browser, compiled alone (api/ui/boardScript.ts): browser globals,
  // and types are all it may import.
  {
    files: ['api/ui/browser/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: [...new Set(['node:*', ...NODE_BUILTINS, ...IO_MODULES])], message: BROWSER },
            { group: API_FORBIDDEN, message: API_MESSAGE },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: 'ImportDeclaration[importKind="value"]', message: BROWSER },
        { selector: 'ImportExpression', message: BROWSER },
        {
          selector:
            'ExportNamedDeclaration[source][exportKind="value"], ExportAllDeclaration[exportKind="value"]',
          message: BROWSER,
        },
      ],
    },
  },
  {
    files: ['cli/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [ENGINE_FRONT_DOOR] }] },
  },
  {
    files: ['test/**/*.ts', 'scripts/**', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
