import pino, { type Logger } from 'pino';

export function createLogger(level: string, name = 'flightdeck'): Logger {
  return pino({ name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}
