/**
 * `--server-url NS/NAME=URL`: where a TerdutServer answers when the operator runs outside
 * the cluster (tests, `npm run up`), since its Service's DNS name only resolves inside.
 * A flag, never a spec field: who may edit a TerdutServer must not be able to point the
 * operator's key at another address.
 */
import type { TerdutServer } from './api/terdut-server.ts';

export type ServerUrls =
  | { readonly kind: 'Valid'; readonly map: ReadonlyMap<string, string> }
  | { readonly kind: 'Invalid'; readonly message: string };

export function parseServerUrls(texts: readonly string[]): ServerUrls {
  const map = new Map<string, string>();
  for (const text of texts.map((t) => t.trim()).filter((t) => t !== '')) {
    const m = /^(?:([a-z0-9-]+)\/([a-z0-9.-]+|\*)|(\*)\/(\*))=(https?:\/\/[^\s/]+\S*)$/.exec(text);
    // NS/NAME, NS/* or */*: a name in any namespace (*/NAME) would be ambiguous, so it is refused.
    if (!m)
      return {
        kind: 'Invalid',
        message: `"${text}" is not NS/NAME=, NS/*= or */*= followed by http(s)://host[:port]`,
      };
    map.set(m[1] ? `${m[1]}/${m[2]}` : '*/*', (m[5] ?? '').replace(/\/+$/, ''));
  }
  return { kind: 'Valid', map };
}

/** The most specific entry wins: NS/NAME, then NS with any name, then any server. */
export function serverUrlMapper(
  map: ReadonlyMap<string, string>,
): ((server: TerdutServer, inCluster: string) => string) | undefined {
  if (map.size === 0) return undefined;
  return (server, inCluster) => {
    const ns = server.metadata.namespace ?? '';
    return map.get(`${ns}/${server.metadata.name}`) ?? map.get(`${ns}/*`) ?? map.get('*/*') ?? inCluster;
  };
}
