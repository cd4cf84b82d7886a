/**
 * One WATCH request as an async stream of events. It ends when the server closes the
 * stream (its timeout), when `signal` aborts, or with an error; reconnecting,
 * resuming and relisting are the reflector's job, not this one's.
 *
 * `onOpen` tells the caller when the server accepted the watch (HTTP 200), which is
 * when a watch is connected: a quiet kind may send no event for minutes after that.
 *
 * An `ERROR` event carrying a 410 is thrown as an ApiError with reason Gone, so the
 * caller handles "too old resourceVersion" the same way whether the server said it
 * in the HTTP status or inside the stream.
 */
import { type ApiStatus, classifyStatus } from './errors.ts';
import type { Transport } from './transport.ts';
import type { KubeObject } from './types.ts';

export type WatchEvent<T extends KubeObject = KubeObject> =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: T }
  /** Only metadata.resourceVersion (and annotations) are meaningful in a bookmark. */
  | { readonly type: 'BOOKMARK'; readonly object: KubeObject };

export interface WatchOptions {
  readonly resourceVersion?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly allowWatchBookmarks?: boolean;
  /** Server-side timeout: the server ends the stream after this many seconds. */
  readonly timeoutSeconds?: number;
  readonly sendInitialEvents?: boolean;
  readonly resourceVersionMatch?: 'NotOlderThan';
  readonly signal?: AbortSignal;
  /** Ask for PartialObjectMetadata instead of whole objects. */
  readonly metadataOnly?: boolean;
  /**
   * Called once the server has answered 200: the watch is established, even if no event
   * follows for minutes (a quiet kind). Errors (non-200) throw from the stream instead.
   */
  readonly onOpen?: () => void;
}

/** Accept header asking for metadata only: PartialObjectMetadata for a watch's objects. */
export const METADATA_ACCEPT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
/** The same for a LIST: the server refuses the object form for a list (406). */
export const METADATA_LIST_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

export async function* watch<T extends KubeObject = KubeObject>(
  transport: Transport,
  path: string,
  opts: WatchOptions = {},
): AsyncGenerator<WatchEvent<T>, void, undefined> {
  const label = `WATCH ${path}`;
  const res = await transport.dedicated({
    method: 'GET',
    path,
    query: {
      watch: 'true',
      resourceVersion: opts.resourceVersion,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      allowWatchBookmarks: opts.allowWatchBookmarks ? 'true' : undefined,
      timeoutSeconds: opts.timeoutSeconds,
      sendInitialEvents: opts.sendInitialEvents ? 'true' : undefined,
      resourceVersionMatch: opts.resourceVersionMatch,
    },
    signal: opts.signal,
    timeoutMs: 0,
    headersTimeoutMs: 10_000,
    accept: opts.metadataOnly ? METADATA_ACCEPT : undefined,
  });
  try {
    if (res.status !== 200) {
      const text = await res.body.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON: keep the text for the message.
      }
      const ra = res.headers['retry-after'];
      throw classifyStatus(res.status, body, label, Array.isArray(ra) ? ra[0] : ra);
    }
    opts.onOpen?.();
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of res.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.trim()) yield parseEvent<T>(line, label);
        nl = buffered.indexOf('\n');
      }
    }
    if (buffered.trim()) yield parseEvent<T>(buffered, label);
  } finally {
    await res.close();
  }
}

function parseEvent<T extends KubeObject>(line: string, label: string): WatchEvent<T> {
  const ev = JSON.parse(line) as { type: string; object: unknown };
  if (ev.type === 'ERROR') {
    const status = ev.object as ApiStatus;
    throw classifyStatus(status.code ?? 500, status, label);
  }
  if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') {
    return { type: ev.type, object: ev.object as T };
  }
  if (ev.type === 'BOOKMARK') return { type: 'BOOKMARK', object: ev.object as KubeObject };
  throw new Error(`${label}: unknown watch event type ${ev.type}`);
}
