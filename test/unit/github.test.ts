import { createHmac, createVerify, generateKeyPairSync } from 'node:crypto';
import { appJwt } from '../../activities/agents/github/auth';
import { idsInRunTitle, isRunOfJob, isValidWebhookSignature, jobStatusOfRun } from '../../domain/github';

describe('GitHub workflow runner rules', () => {
  it('maps run status and conclusion to job statuses', () => {
    expect(jobStatusOfRun({ status: 'queued', conclusion: null })).toBe('triggered');
    expect(jobStatusOfRun({ status: 'waiting', conclusion: null })).toBe('triggered');
    expect(jobStatusOfRun({ status: 'in_progress', conclusion: null })).toBe('in_progress');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'success' })).toBe('successful');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'neutral' })).toBe('successful');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'failure' })).toBe('failure');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'timed_out' })).toBe('failure');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'cancelled' })).toBe('cancelled');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'skipped' })).toBe('skipped');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'action_required' })).toBe('action_required');
    expect(jobStatusOfRun({ status: 'completed', conclusion: 'something-new' })).toBe('failure');
  });

  it('finds the job in a run title', () => {
    const jobId = '01a201da-5a7d-74b0-a79d-4f5c28734adb';
    expect(isRunOfJob({ display_title: `Deploy ${jobId}` }, jobId)).toBe(true);
    expect(isRunOfJob({ display_title: 'Deploy something else', name: 'deploy' }, jobId)).toBe(false);
    expect(idsInRunTitle({ display_title: `Deploy ${jobId.toUpperCase()} now` })).toEqual([jobId]);
  });

  it('accepts exactly the signature of the body under the secret', () => {
    const body = '{"action":"completed"}';
    const good = `sha256=${createHmac('sha256', 's3cret').update(body).digest('hex')}`;
    expect(isValidWebhookSignature('s3cret', body, good)).toBe(true);
    expect(isValidWebhookSignature('other', body, good)).toBe(false);
    expect(isValidWebhookSignature('s3cret', `${body} `, good)).toBe(false);
    expect(isValidWebhookSignature('s3cret', body, undefined)).toBe(false);
    expect(isValidWebhookSignature('s3cret', body, 'sha1=abc')).toBe(false);
  });

  it('signs an app JWT that the public key verifies, issued by the app id', () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const jwt = appJwt(123, privateKey, 1_800_000_000);
    const [header, payload, signature] = jwt.split('.');
    expect(
      createVerify('RSA-SHA256')
        .update(`${header}.${payload}`)
        .verify(publicKey, Buffer.from(signature!, 'base64url')),
    ).toBe(true);
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString())).toEqual({
      iat: 1_800_000_000 - 60,
      exp: 1_800_000_000 + 540,
      iss: '123',
    });
  });
});
