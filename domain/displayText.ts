import type { z } from 'zod';

/**
 * Text that people read: names, slugs, tags, reasons, descriptions, messages. Terminals print it
 * (`flightdeck hold list`), logs carry it and the board shows it, so it may not hold what a
 * terminal or a text renderer acts on instead of showing: C0 and C1 control characters and DEL (an
 * ESC starts a sequence that clears the screen or plants a link; a CR writes over the line) and the
 * bidirectional overrides and isolates (they reorder what is shown, so text reads other than it
 * is). A multi-line field keeps tab and line feed. Free-form values (metadata, configuration) are
 * data: they take any text, and whatever prints them escapes it.
 */
export type TextLines = 'single' | 'multi';

type Range = readonly [from: number, to: number];

const BIDI_CONTROLS: readonly Range[] = [
  [0x202a, 0x202e],
  [0x2066, 0x2069],
];

const REFUSED: Record<TextLines, readonly Range[]> = {
  single: [[0x00, 0x1f], [0x7f, 0x9f], ...BIDI_CONTROLS],
  // Tab (U+0009) and line feed (U+000A) lay out a multi-line text; a CR is refused there too.
  multi: [[0x00, 0x08], [0x0b, 0x1f], [0x7f, 0x9f], ...BIDI_CONTROLS],
};

const hex = (code: number) => code.toString(16).toUpperCase().padStart(4, '0');

// Built from the ranges as `\uXXXX` escapes, so the OpenAPI document shows them as its `pattern`.
const characterClass = (lines: TextLines) =>
  REFUSED[lines].map(([from, to]) => `\\u${hex(from)}-\\u${hex(to)}`).join('');

const SHOWN_AS_IS: Record<TextLines, RegExp> = {
  single: new RegExp(`^[^${characterClass('single')}]*$`),
  multi: new RegExp(`^[^${characterClass('multi')}]*$`),
};

const ANY_REFUSED: Record<TextLines, RegExp> = {
  single: new RegExp(`[${characterClass('single')}]`, 'g'),
  multi: new RegExp(`[${characterClass('multi')}]`, 'g'),
};

const isBidiControl = (code: number) => BIDI_CONTROLS.some(([from, to]) => code >= from && code <= to);

/** Why `text` is refused as display text, naming its first refused character; undefined when it is not. */
export function displayTextProblem(text: string, lines: TextLines): string | undefined {
  const at = text.search(ANY_REFUSED[lines]);
  if (at < 0) return undefined;
  const code = text.charCodeAt(at);
  if (isBidiControl(code)) return `contains the bidirectional formatting character U+${hex(code)}`;
  return lines === 'multi'
    ? `contains the control character U+${hex(code)}; tab and line feed are the only ones taken`
    : `contains the control character U+${hex(code)}; a single-line field takes none`;
}

/** `schema` refusing what display text may not hold (400 naming the field and the character). */
export function displayText<T extends z.ZodString>(schema: T, lines: TextLines): T {
  return schema.regex(SHOWN_AS_IS[lines], {
    error: (issue) => displayTextProblem(String(issue.input), lines),
  });
}

// The escapes JSON has for them; any other as `\u001b`, which is JSON too.
const SHORT_ESCAPES: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** `text` with every character display text may not hold written as its escape (ESC as `\u001b`). */
export function escapeControls(text: string, lines: TextLines): string {
  return text.replace(
    ANY_REFUSED[lines],
    (char) => SHORT_ESCAPES[char] ?? `\\u${hex(char.charCodeAt(0)).toLowerCase()}`,
  );
}
