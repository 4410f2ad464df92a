import type { Tracing } from './tracingProvider';
import type { Config } from './config';

/**
 * Tracing as configured: off (undefined, nothing registered, the OpenTelemetry API stays a no-op,
 * and its SDK is never loaded: 4 MB of heap in each process) unless an OTLP endpoint is set; then
 * spans are batched and sent over OTLP/HTTP (cli/tracingProvider.ts).
 */
export async function startTracing(config: Config, defaultServiceName: string): Promise<Tracing | undefined> {
  const { tracesUrl, serviceName } = config.tracing;
  if (!tracesUrl) return undefined;
  const { installOtlpTracing } = await import('./tracingProvider.js');
  return installOtlpTracing(serviceName ?? defaultServiceName, tracesUrl);
}

export type { Tracing };
