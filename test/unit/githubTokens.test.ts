import { generateKeyPairSync } from 'node:crypto';
import { installationToken } from '../../activities/agents/github/auth';
import { RemoteRefusal } from '../../activities/agents/remote';
import { Egress } from '../../activities/egress';
import { FakeGithub, INSTALLATION_TOKEN } from '../fakes/github';

/**
 * Installation tokens are cached per agent and private key (docs/security.md "Agents"). A second agent
 * that names the same app and installation with a key of its own buys its own token, which GitHub refuses.
 */
describe('GitHub installation token cache', () => {
  const pair = () =>
    generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
  const app = pair();
  const stranger = pair();
  let github: FakeGithub;

  // The fake GitHub listens on loopback, which the egress policy must allow.
  const egress = new Egress({ allow: ['127.0.0.1'], deny: [] });

  beforeAll(async () => {
    github = await new FakeGithub({
      app: { appId: 77, installationId: 88, publicKey: app.publicKey },
    }).start();
  });
  afterAll(() => github.close());

  it('never hands one agent the token another agent bought for the same installation', async () => {
    const owner = { jobAgentId: 'agent-a', appId: 77, installationId: 88, privateKey: app.privateKey };
    await expect(installationToken(egress, github.url, owner)).resolves.toBe(INSTALLATION_TOKEN);
    await expect(installationToken(egress, github.url, owner)).resolves.toBe(INSTALLATION_TOKEN);
    expect(github.requestsTo('/access_tokens')).toHaveLength(1);

    const intruder = { ...owner, jobAgentId: 'agent-b', privateKey: stranger.privateKey };
    await expect(installationToken(egress, github.url, intruder)).rejects.toBeInstanceOf(RemoteRefusal);
    // The same agent with another key is a cache miss too: GitHub decides again.
    await expect(
      installationToken(egress, github.url, { ...owner, privateKey: stranger.privateKey }),
    ).rejects.toBeInstanceOf(RemoteRefusal);
    expect(github.requestsTo('/access_tokens')).toHaveLength(3);
  });
});
