/**
 * One GET to a manager's endpoint on 127.0.0.1, as the kubelet or Prometheus would make
 * it: the status and the body. Over TLS with `tls` (the certificate is not verified:
 * tests that care which certificate is served check it themselves), with a bearer
 * token with `token`. Rejects when no answer comes within `timeoutMs` (5 s).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface Answer {
  readonly status: number;
  readonly body: string;
}

export function httpGet(
  port: number,
  path: string,
  opts: { readonly tls?: boolean; readonly token?: string; readonly timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = opts.token ? { authorization: `Bearer ${opts.token}` } : {};
    const options = {
      host: '127.0.0.1',
      port,
      path,
      headers,
      rejectUnauthorized: false,
      timeout: opts.timeoutMs ?? 5_000,
    };
    const req = (opts.tls ? httpsRequest : httpRequest)(options, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within the timeout`)));
    req.end();
  });
}
