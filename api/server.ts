import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ApiServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Listens on host:port, over HTTPS when given a certificate and key; `close` stops accepting, lets
 * in-flight requests finish, then drops idle sockets.
 */
export function listen(
  app: { callback(): http.RequestListener },
  host: string,
  port: number,
  tls?: { cert: Buffer; key: Buffer },
): Promise<ApiServer> {
  const server = tls
    ? https.createServer({ cert: tls.cert, key: tls.key }, app.callback())
    : http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({
        url: `${tls ? 'https' : 'http'}://${shownHost === '0.0.0.0' ? '127.0.0.1' : shownHost}:${address.port}`,
        close: () =>
          new Promise<void>((done) => {
            const force = setTimeout(() => server.closeAllConnections(), 10_000);
            server.close(() => {
              clearTimeout(force);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
