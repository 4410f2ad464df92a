import { z } from 'zod';
import { printable } from '../../cli/terminalText';
import { displayText, displayTextProblem } from '../../domain/displayText';

const codePoint = (code: number) => `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Every character display text refuses in a single-line field. */
const REFUSED = [
  ...range(0x00, 0x1f),
  ...range(0x7f, 0x9f),
  ...range(0x202a, 0x202e),
  ...range(0x2066, 0x2069),
];

describe('display text', () => {
  it.each(REFUSED.map((code) => [codePoint(code), code]))(
    'refuses %s in a single-line field, naming it',
    (point, code) => {
      expect(displayTextProblem(`ok${String.fromCharCode(code)}ok`, 'single')).toContain(point);
    },
  );

  it('takes tab and line feed in a multi-line field only, and every other refused character nowhere', () => {
    for (const code of REFUSED) {
      const problem = displayTextProblem(`a${String.fromCharCode(code)}b`, 'multi');
      if (code === 0x09 || code === 0x0a) expect(problem).toBeUndefined();
      else expect(problem).toContain(codePoint(code));
    }
  });

  it('takes what people write: accents, emoji, other scripts, marks and separators that reorder nothing', () => {
    for (const text of ['Zürich – prod 🚀', 'نشر', '部署', 'a\u200db', 'x\u00a0y', 'l\u200er']) {
      expect(displayTextProblem(text, 'single')).toBeUndefined();
    }
  });

  it('names the character a bidirectional control is, and the first of several', () => {
    expect(displayTextProblem('invoice\u202Efdp.exe', 'single')).toBe(
      'contains the bidirectional formatting character U+202E',
    );
    expect(displayTextProblem('a\u0007b\u001bc', 'multi')).toBe(
      'contains the control character U+0007; tab and line feed are the only ones taken',
    );
  });

  it('refuses as a zod pattern check, after the checks before it (a trim)', () => {
    const name = displayText(z.string().trim().min(1), 'single');
    expect(name.parse(' api\n')).toBe('api');
    const refused = name.safeParse('a\u001b[2Jb');
    expect(refused.success).toBe(false);
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({
        message: 'contains the control character U+001B; a single-line field takes none',
      }),
    ]);
    expect(refused.error?.issues[0]).toMatchObject({ format: 'regex' });
  });
});

describe('printable', () => {
  it('escapes every character display text refuses, tab and line feed included', () => {
    for (const code of REFUSED) {
      expect(printable(`a${String.fromCharCode(code)}b`)).not.toMatch(/[\p{Cc}\u202a-\u202e\u2066-\u2069]/u);
    }
    expect(printable('\u001b[2J\u0007\r\n\t\u0085\u202e')).toBe('\\u001b[2J\\u0007\\r\\n\\t\\u0085\\u202e');
  });

  it('leaves other text as it is', () => {
    expect(printable('Zürich – prod 🚀 C:\\deploy "x"')).toBe('Zürich – prod 🚀 C:\\deploy "x"');
  });

  it('writes JSON escapes: a JSON document printed with it reads back the same', () => {
    const value = { reason: 'a\u0085b\u202ec\u2066d\u007fe' };
    expect(JSON.parse(printable(JSON.stringify(value)))).toEqual(value);
  });
});
