/**
 * A real smart-HTTP git server for tests: Node's `http` in front of git's own
 * `git-http-backend` run as a CGI program, behind HTTP Basic auth with one user and
 * token. The same backend serves git over HTTP behind Apache or nginx in production, so
 * the client sees real protocol v2 negotiation, real receive-pack and real 401s.
 *
 * CGI (RFC 3875): the request becomes environment variables and stdin; the program
 * answers with a header block (`Status:`, `Content-Type:`…), a blank line and the body.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** git's CGI program on Debian. */
const GIT_HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

export interface GitHttpServerOptions {
  /** Folder whose bare repositories are served: `/<name>.git` is `<root>/<name>.git`. */
  readonly projectRoot: string;
  readonly username: string;
  readonly token: string;
}

export interface ServedRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The Authorization header as received (tests check what the client sent). */
  readonly authorization: string | undefined;
}

export interface GitHttpServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>/<name>` for a repository under the project root. */
  url(name: string): string;
  /** Every request, in order. */
  readonly requests: readonly ServedRequest[];
  stop(): Promise<void>;
}

/** `Authorization` value of a user and token. */
export function basicAuthorization(username: string, token: string): string {
  return `Basic ${Buffer.from(`${username}:${token}`).toString('base64')}`;
}

/** Splits a CGI answer's header block from its body; undefined until the blank line has arrived. */
function splitCgi(buf: Buffer): { status: number; headers: [string, string][]; body: Buffer } | undefined {
  let end = buf.indexOf('\r\n\r\n');
  let sepLen = 4;
  const lf = buf.indexOf('\n\n');
  if (lf !== -1 && (end === -1 || lf < end)) {
    end = lf;
    sepLen = 2;
  }
  if (end === -1) return undefined;
  let status = 200;
  const headers: [string, string][] = [];
  for (const line of buf.subarray(0, end).toString('latin1').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
    else headers.push([name, value]);
  }
  return { status, headers, body: buf.subarray(end + sepLen) };
}

export async function startGitHttpServer(opts: GitHttpServerOptions): Promise<GitHttpServer> {
  const requests: ServedRequest[] = [];
  const expected = basicAuthorization(opts.username, opts.token);

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const record = (status: number): void => {
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        status,
        authorization: req.headers.authorization,
      });
    };
    if (req.headers.authorization !== expected) {
      record(401);
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: '/nonexistent',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: opts.projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_USER: opts.username,
      REMOTE_ADDR: req.socket.remoteAddress ?? '',
    };
    if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length'];
    // CGI passes request headers as HTTP_*: git needs Content-Encoding (gzip) and Git-Protocol (v2).
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') env[`HTTP_${name.toUpperCase().replaceAll('-', '_')}`] = value;
    }
    const child = spawn(GIT_HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    req.pipe(child.stdin);
    child.stdin.on('error', () => {});
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    let head = Buffer.alloc(0);
    let started = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (started) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const parsed = splitCgi(head);
      if (!parsed) return;
      started = true;
      record(parsed.status);
      res.writeHead(parsed.status, parsed.headers);
      if (parsed.body.length > 0) res.write(parsed.body);
    });
    child.once('close', (code) => {
      if (!started) {
        record(500);
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end(`git-http-backend exited ${code}: ${stderr}`);
        return;
      }
      res.end();
    });
  };

  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (name) => `http://127.0.0.1:${port}/${name}`,
    requests,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
