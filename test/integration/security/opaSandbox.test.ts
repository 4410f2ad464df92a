import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { recordsApi } from '../../helpers/orchestration';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * A tenant's Rego reaches neither the network nor the server's files nor its environment
 * (docs/security.md "OPA sandbox"), whether the policy is written now (refused at write)
 * or was stored before (refused when evaluated, by the release's workflow), and explaining a
 * release runs no policy at all.
 */
describe('OPA sandbox', () => {
  let stack: TestStack;
  let api: ReturnType<typeof recordsApi>;
  let server: http.Server;
  const requests: string[] = [];
  let base: string;
  let secretDir: string;
  let secretFile: string;
  const marker = `MARKER-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ enum: [marker] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // A file on the server's disk that is a valid schema: loaded through a `$ref`, a failed match
    // would quote it in full.
    secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flightdeck-secret-'));
    secretFile = path.join(secretDir, 'secret.json');
    fs.writeFileSync(secretFile, JSON.stringify({ enum: [marker] }));
    stack = await startTestStack();
    api = recordsApi(stack);
  });
  afterAll(async () => {
    await stack.close();
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(secretDir, { recursive: true, force: true });
  });

  const deny = (body: string) => `package main\n\ndeny contains msg if {\n${body}\n}\n`;
  const annotated = (schema: object) =>
    `package main\n\n# METADATA\n# schemas:\n#   - input: ${JSON.stringify(schema)}\ndeny contains msg if {\n  input.x == 1\n  msg := "x"\n}\n`;

  /** Each builtin class that could reach out, with how the refusal names it. */
  const vectors = () =>
    [
      [
        'http.send',
        deny(`  r := http.send({"method": "GET", "url": "${base}/send"})\n  msg := r.raw_body`),
        /http\.send/,
      ],
      [
        'net.lookup_ip_addr',
        deny('  addrs := net.lookup_ip_addr("localhost")\n  msg := sprintf("%v", [addrs])'),
        /net\.lookup_ip_addr/,
      ],
      [
        'json.verify_schema, remote $ref',
        deny(`  r := json.verify_schema({"$ref": "${base}/verify"})\n  msg := sprintf("%v", [r])`),
        /json\.verify_schema/,
      ],
      [
        'json.verify_schema, file $ref',
        deny(`  r := json.verify_schema({"$ref": "file://${secretFile}"})\n  msg := sprintf("%v", [r])`),
        /json\.verify_schema/,
      ],
      [
        'json.match_schema, remote $ref',
        deny(`  r := json.match_schema("x", {"$ref": "${base}/match"})\n  msg := sprintf("%v", [r])`),
        /json\.match_schema/,
      ],
      [
        'json.match_schema, file $ref',
        deny(`  r := json.match_schema("x", {"$ref": "file://${secretFile}"})\n  msg := sprintf("%v", [r])`),
        /json\.match_schema/,
      ],
      [
        'json.match_schema, $ref from the input',
        deny('  r := json.match_schema("x", input.schema)\n  msg := sprintf("%v", [r])'),
        /json\.match_schema/,
      ],
      ['schema annotation, remote $ref', annotated({ $ref: `${base}/annotation` }), /METADATA/],
      ['schema annotation, file $ref', annotated({ $ref: `file://${secretFile}` }), /METADATA/],
      ['opa.runtime', deny('  msg := sprintf("%v", [opa.runtime().env])'), /opa\.runtime/],
    ] as const;

  const policyBody = (name: string, rego: string) => ({
    name,
    selector: 'deployment.slug == "sandboxed"',
    rules: [{ planValidationOpa: { name: 'gate', rego } }],
  });

  it('refuses at write every policy that calls a builtin reaching the network, files or the environment', async () => {
    for (const [what, rego, named] of vectors()) {
      const res = await stack.http.post(`${api.ws}/policies`).set(stack.auth).send(policyBody(what, rego));
      expect({ what, status: res.status }).toEqual({ what, status: 400 });
      expect(JSON.stringify(res.body.errors)).toMatch(named);
      expect(JSON.stringify(res.body)).not.toContain(marker);
    }
    expect((await api.get<{ items: unknown[] }>('/policies')).items).toHaveLength(0);
    expect(requests).toEqual([]);
  });

  it('refuses them when evaluated too, so a policy stored before reaches nothing', async () => {
    const session = stack.rego.session(stack.workspaceId);
    const input = { schema: { $ref: `${base}/input` } };
    for (const [what, rego, named] of vectors()) {
      const failure = await session.deny(rego, input).then(
        (messages) => `evaluated: ${messages.join('; ')}`,
        (error: Error) => error.message,
      );
      expect({ what, failure }).toEqual({ what, failure: expect.stringMatching(named) });
      expect(failure).not.toContain(marker);
    }
    expect(requests).toEqual([]);
  });

  it('holds a release whose stored policy calls one, reaching nothing from the workflow or from explain', async () => {
    await api.agent('sandbox-runner', 'test-runner', { status: 'successful' });
    const system = await api.system('sandbox');
    const environment = await api.environment('prod', 'resource.metadata["lane"] == "sandbox"', system);
    const deployment = await api.deployment('sandboxed', system, { jobAgents: [{ ref: 'sandbox-runner' }] });
    const resource = await api.resource('sandbox-0', 'service', { lane: 'sandbox' });
    // As if written before the sandbox: straight into the table, past the check at write.
    const rego = deny(
      `  r := json.match_schema("x", {"$ref": "file://${secretFile}"})\n  s := json.verify_schema({"$ref": "${base}/workflow"})\n  msg := sprintf("%v %v", [r, s])`,
    );
    await stack.orm.em
      .fork()
      .getConnection()
      .execute(
        `INSERT INTO policy (id, workspace_id, name, selector, rules) VALUES (?, ?, 'stored before', ?, ?::jsonb)`,
        [
          randomUUID(),
          stack.workspaceId,
          'deployment.slug == "sandboxed"',
          JSON.stringify([{ id: randomUUID(), planValidationOpa: { name: 'gate', rego } }]),
        ],
      );

    const version = await api.version(deployment, '1.0.0');
    const held = await api.releaseWith(
      (r) => r.versionId === version && /could not run/.test(r.evaluation?.reason ?? ''),
      'the release to be held by a policy that cannot run',
    );
    expect(held.evaluation!.reason).toMatch(
      /plan validation gate could not run: .*json\.(match|verify)_schema/,
    );
    expect(held.phase).toBe('pending');

    const explained = await api.get<{ rules: { kind: string; state: string; reason: string }[] }>(
      `/release-targets/${resource}-${environment}-${deployment}/explain?versionId=${version}`,
    );
    expect(explained.rules.find((rule) => rule.kind === 'planValidationOpa')).toEqual(
      expect.objectContaining({ state: 'waiting', reason: held.evaluation!.reason }),
    );
    expect(JSON.stringify([held, explained])).not.toContain(marker);
    expect(requests).toEqual([]);
  });
});
