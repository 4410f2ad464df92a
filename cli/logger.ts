import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * The active span's ids, added to every log line so a line leads to its trace (request lines,
 * relay lines, activity lines alike). Nothing when no span is active, as always with tracing off.
 */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

export function createLogger(level: string, name = 'flightdeck', destination?: DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: traceFields,
    },
    destination,
  );
}
