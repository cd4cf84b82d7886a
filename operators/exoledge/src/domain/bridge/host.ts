/**
 * The `host` of a request (`/domains/manifest?host=...`): the console's key for a domain,
 * read strictly, since a request is not a record and has no apiserver to judge it. A DNS
 * name, a wildcard allowed as the whole first label, compared in lowercase as DNS names
 * are: `Shop.Example.com` and `shop.example.com` ask for the same record.
 */

/** A host the directory can be asked about, or why not. */
export type ParsedHost =
  | { readonly kind: 'Host'; readonly host: string }
  | { readonly kind: 'BadHost'; readonly message: string };

/** DNS's limit on a whole name. */
const MAX_HOST_LENGTH = 253;
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * `values` are every `host` parameter of the query (none, one or several). Guarantees:
 * `Host` holds a lowercase name; each refusal says what to write instead.
 */
export function parseHost(values: readonly string[]): ParsedHost {
  if (values.length === 0) {
    return bad('the query needs a host, such as ?host=shop.example.com');
  }
  if (values.length > 1) {
    return bad(`the query names ${values.length} hosts: ask for one at a time`);
  }
  const text = values[0] ?? '';
  if (text.includes('://')) {
    return bad(
      `host ${JSON.stringify(text)} has a scheme: write the host name alone, such as shop.example.com`,
    );
  }
  if (text.includes('/')) return bad(`host ${JSON.stringify(text)} has a path: write the host name alone`);
  if (text.includes(':')) return bad(`host ${JSON.stringify(text)} has a port: write the host name alone`);
  const host = text.toLowerCase();
  if (host.length === 0 || host.length > MAX_HOST_LENGTH) {
    return bad(`host ${JSON.stringify(text)} is not a DNS name: 1 to ${MAX_HOST_LENGTH} characters`);
  }
  const labels = host.split('.');
  const wildcard = labels[0] === '*';
  const named = wildcard ? labels.slice(1) : labels;
  if (named.length === 0 || !named.every((l) => LABEL.test(l))) {
    return bad(
      `host ${JSON.stringify(text)} is not a DNS name: labels of letters, digits and hyphens separated by ` +
        'dots, each starting and ending with a letter or digit, a wildcard only as the whole first label',
    );
  }
  return { kind: 'Host', host };
}

function bad(message: string): ParsedHost {
  return { kind: 'BadHost', message };
}
