import { JobAgentBody } from '../../api/schemas/jobAgent';
import { agentDestination } from '../../domain/credentialBinding';
import { ArgoCdConfig, argoCdServerUrl } from '../../domain/jobAgents';

describe("an Argo CD agent's server", () => {
  it('takes a bare host name as https://<host>, and a URL as written', () => {
    expect(argoCdServerUrl('argocd.example.com')).toBe('https://argocd.example.com');
    expect(argoCdServerUrl('argocd.example.com:8443/argo')).toBe('https://argocd.example.com:8443/argo');
    expect(argoCdServerUrl('http://argocd.internal:8080')).toBe('http://argocd.internal:8080');
    expect(argoCdServerUrl('HTTPS://Argo.example')).toBe('HTTPS://Argo.example');
  });

  it('is stored as written: a declarative client reads back what it sent', () => {
    const body = JobAgentBody.parse({
      name: 'argo',
      type: 'argo-cd',
      config: { serverUrl: 'argocd.example.com', apiKey: 'k', template: 'x' },
    });
    expect(body.config).toEqual({ server_url: 'argocd.example.com', api_key: 'k', template: 'x' });
  });

  it('refuses what names no http(s) server', () => {
    for (const serverUrl of [
      'ftp://argo.example',
      'https://user:pw@argo.example',
      'user@argo.example',
      'https://',
      '',
      'a b',
    ]) {
      expect({ serverUrl, accepted: ArgoCdConfig.safeParse({ server_url: serverUrl }).success }).toEqual({
        serverUrl,
        accepted: false,
      });
    }
    expect(ArgoCdConfig.safeParse({ server_url: 'x'.repeat(2_049) }).success).toBe(false);
  });

  it('binds a stored credential to the server it names, however it is written', () => {
    const bare = agentDestination('argo-cd', { server_url: 'argocd.example.com' });
    expect(agentDestination('argo-cd', { server_url: 'https://argocd.example.com/' })).toBe(bare);
    expect(agentDestination('argo-cd', { server_url: 'http://argocd.example.com' })).not.toBe(bare);
    expect(agentDestination('argo-cd', { server_url: 'argocd.attacker.example' })).not.toBe(bare);
  });
});
