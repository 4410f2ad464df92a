/**
 * Two projects: `unit` (pure, no servers) and `integration` (real PostgreSQL and a real Temporal
 * dev server, started once in globalSetup). `npx jest --selectProjects unit` runs without servers.
 */
const transform = {
  '^.+\\.(t|j)s$': [
    '@swc/jest',
    {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022', keepClassNames: true },
      module: { type: 'commonjs' },
    },
  ],
};
// The CEL library and the OpenAPI validator ship ES modules only; jest's module system needs them compiled to CommonJS.
const transformIgnorePatterns = [
  '/node_modules/(?!(@marcbachmann/cel-js|@seriousme/openapi-schema-validator)/)',
];

// Relative imports name the compiled file (`./tracingProvider.js`, as Node resolves a dynamic import);
// jest loads the TypeScript source.
const moduleNameMapper = { '^(\\.{1,2}/.*)\\.js$': '$1' };

module.exports = {
  maxWorkers: 2,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/globalSetup.ts',
      globalTeardown: '<rootDir>/test/globalTeardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/setupIntegration.ts'],
      slowTestThreshold: 30,
    },
  ],
};
