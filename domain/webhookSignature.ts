import { createHmac } from 'node:crypto';

/** The header a webhook's receiver checks: `sha256=` and the hex HMAC-SHA256 of the body under its secret. */
export const SIGNATURE_HEADER = 'X-Flightdeck-Signature-256';

export function webhookSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
