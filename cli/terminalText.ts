import { escapeControls } from '../domain/displayText';

/**
 * A line as a terminal may print it: every control character (tab, line feed and CR included) and
 * every bidirectional override or isolate written as its escape (ESC as `\u001b`), so what the
 * server or a job sends cannot clear the screen, write over a line, add one or plant a link.
 * Records stored before such text was refused at write hold it still; this is what keeps their
 * printing safe.
 */
export function printable(line: string): string {
  return escapeControls(line, 'single');
}
