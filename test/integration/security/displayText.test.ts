import type { EntityManager } from '@mikro-orm/postgresql';
import { holdListCommand } from '../../../cli/commands/hold';
import { expectFieldError, expectNothingWritten } from '../../helpers/records';
import { listenOnSocket, startTestStack, type TestStack } from '../../helpers/stack';

/** What a terminal acts on rather than shows: C0 and C1 controls, DEL, bidirectional overrides. */
const RAW_CONTROL = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u;

/** A reason that clears the screen, rings the bell, writes over its line and plants a link. */
const HOSTILE_REASON =
  'routine\u001b[2J\u0007\rAll holds lifted \u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007';

/**
 * docs/security.md "Shared processes": names, reasons and descriptions refuse control
 * characters at write (a multi-line field keeps tab and line feed), and the CLI prints what was
 * stored before with them escaped.
 */
describe('text people read', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const hold = (reason: string) => ({ selector: 'environment.name == "prod"', effect: 'block', reason });

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  it.each([
    ['ESC', 'routine\u001b[2J', 'U+001B'],
    ['BEL', 'routine\u0007', 'U+0007'],
    ['CR', 'routine\rAll holds lifted', 'U+000D'],
    ['a right-to-left override', 'routine \u202Etxt.exe', 'U+202E'],
  ])('refuses a hold whose reason holds %s, naming the field and the character', async (_, reason, point) => {
    const res = await expectNothingWritten(stack, ['hold', 'outbox'], () =>
      stack.http.post(`${ws()}/holds`).set(stack.auth).send(hold(reason)),
    );
    expectFieldError(res, 'body.reason', point);
  });

  it('refuses control characters, tab and line feed included, in a name, and control characters in a description', async () => {
    for (const [name, point] of [
      ['prod\u001b[31m', 'U+001B'],
      ['prod\tblue', 'U+0009'],
      ['prod\nstaging', 'U+000A'],
    ] as const) {
      const res = await expectNothingWritten(stack, ['environment'], () =>
        stack.http.post(`${ws()}/environments`).set(stack.auth).send({ name }),
      );
      expectFieldError(res, 'body.name', point);
    }
    const res = await expectNothingWritten(stack, ['deployment'], () =>
      stack.http
        .post(`${ws()}/deployments`)
        .set(stack.auth)
        .send({ name: 'api', slug: 'api', description: 'serves\r\nthe API\u0085' }),
    );
    expectFieldError(res, 'body.description', 'U+000D');
  });

  it('keeps tab and line feed in a multi-line description and reason', async () => {
    const description = 'Serves the API.\n\n\tOwner: payments';
    const created = await stack.http
      .post(`${ws()}/deployments`)
      .set(stack.auth)
      .send({ name: 'Multi-line', slug: 'multi-line', description });
    expect(created.status).toBe(202);
    const read = await stack.http.get(`${ws()}/deployments/${created.body.id}`).set(stack.auth);
    expect(read.body.description).toBe(description);
    const reason = 'year-end freeze:\n\t- payments\n\t- billing';
    const held = await stack.http.post(`${ws()}/holds`).set(stack.auth).send(hold(reason));
    expect(held.status).toBe(201);
    expect(held.body.reason).toBe(reason);
  });

  it('prints a hold stored before with control characters in its reason with them escaped', async () => {
    const created = await stack.http.post(`${ws()}/holds`).set(stack.auth).send(hold('stored before'));
    expect(created.status).toBe(201);
    // As a hold written before its reason was checked holds it.
    await (stack.orm.em.fork() as EntityManager).execute('UPDATE hold SET reason = ? WHERE id = ?', [
      HOSTILE_REASON,
      created.body.id,
    ]);
    const server = await listenOnSocket(stack);
    try {
      const lines: string[] = [];
      const write = (line: string) => lines.push(line);
      const connection = { api: server.url, key: stack.apiKey, workspace: stack.workspaceId };
      expect(await holdListCommand(connection, write, write)).toBe(0);
      const printed = lines.find((line) => line.startsWith(created.body.id));
      expect(printed).toBeDefined();
      expect(printed).not.toMatch(RAW_CONTROL);
      expect(printed).toContain(
        ': routine\\u001b[2J\\u0007\\rAll holds lifted \\u001b]8;;https://evil.example\\u0007click\\u001b]8;;\\u0007',
      );
      expect(lines.filter((line) => RAW_CONTROL.test(line))).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
