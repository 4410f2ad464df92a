/**
 * Names shared by the jest global setup (which starts the servers) and the helpers tests use.
 * Global setup hands everything to the test workers through environment variables.
 */
export const HARNESS_ENV = {
  temporalAddress: 'FLIGHTDECK_TEST_TEMPORAL_ADDRESS',
  temporalCli: 'FLIGHTDECK_TEST_TEMPORAL_CLI',
  pgAdminUrl: 'FLIGHTDECK_TEST_PG_ADMIN_URL',
  templateDatabase: 'FLIGHTDECK_TEST_TEMPLATE_DB',
  runId: 'FLIGHTDECK_TEST_RUN_ID',
  workflowBundle: 'FLIGHTDECK_WORKFLOW_BUNDLE',
  chromium: 'FLIGHTDECK_TEST_CHROMIUM',
} as const;

export function harnessValue(name: keyof typeof HARNESS_ENV): string {
  const value = process.env[HARNESS_ENV[name]];
  if (!value)
    throw new Error(`${HARNESS_ENV[name]} is not set: run integration tests through jest (npm test)`);
  return value;
}

/** The server's admin URL with another database name. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
