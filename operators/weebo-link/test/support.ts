/** Fixtures shared by the unit tests: the RFC rule, a source and its target. */
import type { KubeObject } from '@operators/kit';
import { loadRules, type Rule } from '../src/domain/index.ts';
import { EXAMPLE_RULES_YAML } from '../src/example-rules.ts';

export function exampleRule(yaml = EXAMPLE_RULES_YAML): Rule {
  const { rules, errors } = loadRules(yaml);
  if (!rules[0]) throw new Error(JSON.stringify(errors));
  return rules[0];
}

export function user(
  name: string,
  opts: { uid?: string; isActive?: boolean; header?: string | null; username?: string; ns?: string } = {},
): KubeObject {
  const header = opts.header === undefined ? 'enabled' : opts.header;
  return {
    apiVersion: 'authentik.weebo.io/v1alpha1',
    kind: 'AuthentikUser',
    metadata: {
      name,
      namespace: opts.ns ?? 'auth',
      uid: opts.uid ?? `uid-${name}`,
      creationTimestamp: '2026-10-18T10:00:00Z',
      ...(header === null ? {} : { annotations: { 'link.weebo.io/stalwart': header } }),
    },
    spec: { username: opts.username ?? name, email: `${name}@weebo.poc`, isActive: opts.isActive ?? true },
  };
}
