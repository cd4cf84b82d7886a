/**
 * The plain GETs the plane and its node wait on (health, readiness, an object's
 * status): the status and body, a timeout, nothing retried here (callers poll).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

export interface TlsOptions {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** Self-signed health endpoints (kube-scheduler's): the status is all that is read. */
  readonly insecure?: boolean;
}

export function httpGet(url: string, timeoutMs = 2_000): Promise<HttpAnswer> {
  return answer(httpRequest(url, { timeout: timeoutMs }));
}

export function httpsGet(url: string, tls: TlsOptions, timeoutMs = 5_000): Promise<HttpAnswer> {
  const { insecure, ...certs } = tls;
  return answer(httpsRequest(url, { ...certs, rejectUnauthorized: !insecure, timeout: timeoutMs }));
}

function answer(req: ReturnType<typeof httpRequest>): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}
