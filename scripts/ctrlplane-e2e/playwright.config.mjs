// Playwright config for Ctrlplane's API tests on Flightdeck, copied beside their e2e/ by
// scripts/ctrlplane-e2e.sh in place of their setup project, which signs up through their web UI.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests/api',
  timeout: 90_000,
  fullyParallel: true,
  workers: Number(process.env.CTRLPLANE_E2E_WORKERS ?? 2),
  reporter: [['list'], ['json', { outputFile: 'results.json' }]],
  // Their client adds /api before each /v1 path; our API serves both (api/openapi.ts, API_PREFIXES).
  use: { baseURL: process.env.FLIGHTDECK_E2E_URL },
  projects: [{ name: 'api-tests' }],
});
