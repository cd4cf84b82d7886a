/**
 * A bridge started in the test process, and a client for it. The directory can be an
 * in-memory one (the server's own tests) or the shipped JSON file (the real-apiserver test).
 */
import { pino } from 'pino';
import { type Bridge, type BridgeOptions, startBridge } from '../../src/bridge/server.ts';
import {
  type DirectoryEntry,
  type DomainDirectory,
  type DomainRecord,
  decodeRecord,
} from '../../src/domain/bridge/index.ts';

/** A directory that holds `records` by host, read through the real decoder. */
export function memoryDirectory(records: Readonly<Record<string, unknown>>): DomainDirectory {
  const entries = new Map<string, DirectoryEntry>(
    Object.entries(records).map(([h, r]) => [h, decodeRecord(r)]),
  );
  return { lookup: async (host) => entries.get(host) };
}

/** The JSON text of a directory file holding `records`. */
export function directoryJson(records: Readonly<Record<string, DomainRecord>>): string {
  return `${JSON.stringify({ domains: records }, null, 2)}\n`;
}

export function startTestBridge(opts: Omit<BridgeOptions, 'log' | 'port' | 'host'>): Promise<Bridge> {
  return startBridge({ ...opts, log: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
}

export interface BridgeReply {
  readonly status: number;
  readonly contentType: string | null;
  readonly allow: string | null;
  readonly text: string;
}

/** One request to the bridge at `url`; `body` makes it a POST. */
export async function ask(
  url: string,
  path: string,
  init: { readonly method?: string; readonly body?: string; readonly accept?: string } = {},
): Promise<BridgeReply> {
  const res = await fetch(url + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: init.accept ? { accept: init.accept } : {},
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    allow: res.headers.get('allow'),
    text: await res.text(),
  };
}
