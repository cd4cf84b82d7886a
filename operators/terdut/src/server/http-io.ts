/**
 * Reading a request body and writing replies for the terdut-server stand-in, on plain
 * node:http. JSON replies carry a Content-Length, so a client that reads one never
 * waits on a connection close; a 204 carries no body and no Content-Type.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MSG } from './errors.ts';

/** Far above anything the operator sends; a bound keeps a runaway client from eating memory. */
export const MAX_BODY_BYTES = 1 << 20;

export class BodyTooLarge extends Error {
  constructor() {
    super(MSG.bodyTooLarge);
    this.name = 'BodyTooLarge';
  }
}

export async function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buf.length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  const text = JSON.stringify(body);
  sendRaw(res, status, text, headers);
}

/** Sends `text` as text/plain, as Go's `http.Error` and `http.NotFound` do. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  res
    .writeHead(status, {
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'content-length': String(Buffer.byteLength(text)),
    })
    .end(text);
}

/** Sends `text` as JSON as it is, even when it is not JSON (the malformed-body knob). */
export function sendRaw(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  res
    .writeHead(status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
    })
    .end(text);
}
