import { Writable } from 'node:stream';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { loadConfig } from '../../cli/config';
import { createLogger } from '../../cli/logger';
import { startTracing, type Tracing } from '../../cli/tracing';
import { installTracing } from '../../cli/tracingProvider';
import { outboxTraceContext } from '../../db/outbox';

/** A logger from the processes' factory whose lines land in an array. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger('info', 'test', destination), lines };
}

describe('tracing configuration', () => {
  it('is off unless an OTLP endpoint is set', async () => {
    const config = loadConfig({});
    expect(config.tracing).toEqual({ tracesUrl: undefined, serviceName: undefined });
    expect(await startTracing(config, 'flightdeck-api')).toBeUndefined();
  });

  it('loads the SDK and registers a tracer provider once an endpoint is set', async () => {
    const tracing = await startTracing(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }),
      'flightdeck-api',
    );
    try {
      expect(tracing).toBeDefined();
      // Left open, the span is never exported.
      expect(trace.getTracer('test').startSpan('work').spanContext().traceId).not.toBe('0'.repeat(32));
    } finally {
      await tracing?.shutdown();
    }
  });

  it('sends traces to v1/traces under the general endpoint, or to the traces endpoint as given', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing.tracesUrl).toBe(
      'http://collector:4318/v1/traces',
    );
    const both = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/ingest',
      OTEL_SERVICE_NAME: 'deploys',
    });
    expect(both.tracing).toEqual({ tracesUrl: 'https://traces.example.com/ingest', serviceName: 'deploys' });
  });

  it('refuses an endpoint that is not an http(s) URL', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });
});

describe('with tracing off', () => {
  it('writes no trace context into outbox rows and no trace ids into log lines', () => {
    const { logger, lines } = capture();
    trace.getTracer('test').startActiveSpan('work', (span) => {
      expect(outboxTraceContext()).toBeNull();
      logger.info('inside');
      span.end();
    });
    expect(lines[0]).not.toHaveProperty('trace_id');
  });
});

describe('with tracing on', () => {
  let tracing: Tracing;
  beforeEach(() => {
    tracing = installTracing('test', new SimpleSpanProcessor(new InMemorySpanExporter()));
  });
  afterEach(() => tracing.shutdown());

  it("puts the active span's trace and span ids on every log line, and nothing outside a span", () => {
    const { logger, lines } = capture();
    const ids = trace.getTracer('test').startActiveSpan('work', (span) => {
      logger.child({ reqId: 'r-1' }).info('inside');
      span.end();
      return span.spanContext();
    });
    logger.info('outside');
    expect(lines[0]).toMatchObject({
      msg: 'inside',
      reqId: 'r-1',
      trace_id: ids.traceId,
      span_id: ids.spanId,
    });
    expect(lines[1]).not.toHaveProperty('trace_id');
  });

  it("records the active span's traceparent for the outbox relay", () => {
    const ids = trace.getTracer('test').startActiveSpan('work', (span) => {
      const carrier = JSON.parse(outboxTraceContext()!) as Record<string, string>;
      expect(carrier.traceparent).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
      span.end();
      return span.spanContext();
    });
    expect(ids.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(outboxTraceContext()).toBeNull();
  });
});
