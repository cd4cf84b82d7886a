/**
 * Path-pattern matching for the terdut-server stand-in, no framework: `/api/teams/{teamId}`
 * matches a path whose `{…}` segments are decimal ids (int64 on the real server). The
 * outcome separates "no such path" (404) from "path known, method not" (405), which the
 * wire contract tells apart.
 */

/** The numeric path parameters of a matched route. */
export class Params {
  private readonly values: ReadonlyMap<string, number>;

  constructor(values: ReadonlyMap<string, number>) {
    this.values = values;
  }

  /** A parameter the pattern declares; asking for another is a bug in the route table. */
  id(name: string): number {
    const v = this.values.get(name);
    if (v === undefined) throw new Error(`route has no parameter {${name}}`);
    return v;
  }
}

export interface RouteDef<E> {
  /** e.g. `/api/teams/{teamId}/integrations/{integrationId}` */
  readonly pattern: string;
  /** Keyed by upper-case HTTP method. */
  readonly methods: Readonly<Record<string, E>>;
}

export type Match<E> =
  | { readonly kind: 'found'; readonly endpoint: E; readonly params: Params }
  | { readonly kind: 'wrong-method'; readonly allow: readonly string[] }
  | { readonly kind: 'no-route' };

interface Compiled<E> {
  readonly regex: RegExp;
  readonly names: readonly string[];
  readonly methods: Readonly<Record<string, E>>;
}

const PARAM = /^\{([A-Za-z]+)\}$/;

function compile<E>(def: RouteDef<E>): Compiled<E> {
  const names: string[] = [];
  const source = def.pattern
    .split('/')
    .map((segment) => {
      const m = PARAM.exec(segment);
      if (!m?.[1]) return segment.replace(/[.*+?^$()[\]{}|\\]/g, '\\$&');
      names.push(m[1]);
      return '(\\d+)';
    })
    .join('/');
  return { regex: new RegExp(`^${source}$`), names, methods: def.methods };
}

export class Router<E> {
  private readonly routes: readonly Compiled<E>[];

  constructor(defs: readonly RouteDef<E>[]) {
    this.routes = defs.map(compile);
  }

  match(method: string, path: string): Match<E> {
    for (const route of this.routes) {
      const m = route.regex.exec(path);
      if (!m) continue;
      // Own keys only: a method named like an Object.prototype member must not match.
      const endpoint = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined;
      if (endpoint === undefined) return { kind: 'wrong-method', allow: Object.keys(route.methods) };
      const values = new Map(route.names.map((name, i) => [name, Number(m[i + 1])] as const));
      return { kind: 'found', endpoint, params: new Params(values) };
    }
    return { kind: 'no-route' };
  }
}
