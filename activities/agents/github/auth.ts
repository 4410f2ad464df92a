import { createHash, createSign } from 'node:crypto';
import type { Egress } from '../../egress';
import { remoteJson } from '../remote';

/**
 * GitHub App authentication: an RS256 JWT signed with the app's private key (issued by the app id,
 * valid 9 minutes, back-dated 60 s for clock drift) buys an installation access token, which is
 * cached until 5 minutes before it expires. The cache is per process and safe to be cold. It is keyed
 * by the job agent and a hash of the private key as well as the installation: another agent (of
 * another workspace, say) that names the same app and installation never gets this agent's token,
 * it buys its own with its own key, which GitHub refuses unless the key is the app's.
 */

export const GITHUB_HEADERS = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };

const TOKEN_MARGIN_MS = 5 * 60_000;
const tokens = new Map<string, { token: string; expiresAt: number }>();

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

export function appJwt(
  appId: number,
  privateKeyPem: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): string {
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const payload = base64url(
    JSON.stringify({ iat: nowSeconds - 60, exp: nowSeconds + 540, iss: String(appId) }),
  );
  const signature = createSign('RSA-SHA256').update(`${header}.${payload}`).sign(privateKeyPem);
  return `${header}.${payload}.${base64url(signature)}`;
}

export interface GithubAppCredentials {
  jobAgentId: string;
  appId: number;
  installationId: number;
  privateKey: string;
}

export async function installationToken(
  egress: Egress,
  baseUrl: string,
  app: GithubAppCredentials,
): Promise<string> {
  const keyHash = createHash('sha256').update(app.privateKey).digest('hex');
  const key = [app.jobAgentId, baseUrl, app.appId, app.installationId, keyHash].join('|');
  const cached = tokens.get(key);
  if (cached && cached.expiresAt - TOKEN_MARGIN_MS > Date.now()) return cached.token;
  const issued = await remoteJson<{ token: string; expires_at: string }>(
    egress,
    'GitHub',
    `${baseUrl}/app/installations/${app.installationId}/access_tokens`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${appJwt(app.appId, app.privateKey)}`, ...GITHUB_HEADERS },
    },
  );
  tokens.set(key, { token: issued.token, expiresAt: Date.parse(issued.expires_at) });
  return issued.token;
}
