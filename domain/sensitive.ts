/**
 * Configuration keys whose values are secrets, wherever they appear at the top level of a job
 * agent configuration (the agent's own, a deployment's agent entry, a version's): stored
 * encrypted, and shown as `{"sensitive": true}` in responses. Writing `{"sensitive": true}` back
 * keeps the stored value, so a client can GET, edit and PUT without handling the secret.
 */
export const SENSITIVE_CONFIG_KEYS: ReadonlySet<string> = new Set([
  'api_key',
  'apiKey',
  'token',
  'private_key',
  'privateKey',
  'webhook_secret',
  'webhookSecret',
  'client_secret',
  'password',
]);

export const REDACTED = Object.freeze({ sensitive: true as const });

export function isRedactedMarker(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.keys(value).length === 1 &&
    (value as { sensitive?: unknown }).sensitive === true
  );
}

/**
 * The key that marks a sealed value inside a stored job snapshot (`{"$sealed": "fd1:…"}`), which a
 * claim opens wherever it finds it. Reserved: no request may send it, or a caller could plant a
 * ciphertext (from a backup, or another workspace) and have a claim decrypt it for them.
 */
export const SEALED_MARKER_KEY = '$sealed';
