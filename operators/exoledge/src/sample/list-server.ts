/**
 * A list provider on 127.0.0.1, faithful to the contract the operator relies on: GET
 * answers 200 with the list, an ETag (the SHA-256 of the body) and a Last-Modified;
 * a conditional GET whose If-None-Match matches answers 304 with no body. It serves the
 * sample of `npm run up`, and stands for real providers in the tests, which can change
 * a list, make it fail with any status, or look at the requests it got.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedList {
  /** The status to answer with; 200 unless set. */
  readonly status?: number;
  readonly body?: string;
  /** Send ETag and Last-Modified (default true): without them no GET can be conditional. */
  readonly validators?: boolean;
}

export interface ListRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** What was answered. */
  readonly status: number;
}

export interface ListServer {
  /** The URL of `path` on this server. */
  url(path: string): string;
  /** What `path` serves from now on. */
  serve(path: string, list: ServedList): void;
  /** Every request so far, oldest first. */
  readonly requests: readonly ListRequest[];
  close(): Promise<void>;
}

export async function startListServer(): Promise<ListServer> {
  const lists = new Map<string, { list: ServedList; etag: string; lastModified: string }>();
  const requests: ListRequest[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const entry = lists.get(path);
    let status = entry?.list.status ?? (entry ? 200 : 404);
    const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
    if (entry && status === 200 && entry.list.validators !== false) {
      headers.etag = entry.etag;
      headers['last-modified'] = entry.lastModified;
      if (req.headers['if-none-match'] === entry.etag) status = 304;
    }
    requests.push({ path, headers: req.headers, status });
    res.writeHead(status, headers);
    res.end(status === 200 ? (entry?.list.body ?? '') : status === 304 ? undefined : `error ${status}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    serve(path, list) {
      const body = list.body ?? '';
      lists.set(path, {
        list,
        etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`,
        lastModified: new Date().toUTCString(),
      });
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
