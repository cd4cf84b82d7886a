/**
 * RFC 0002's example rule: the rule of the local run and the fixture of the tests. One
 * change from the RFC's text: its `safe: { cel: >- ... }` puts a block scalar inside a
 * flow map, which is not valid YAML, so `safe` is written as a block map here.
 */
export const EXAMPLE_RULES_YAML = `links:
  - name: authentik-user-stalwart-account
    header: stalwart
    source:
      apiVersion: authentik.weebo.io/v1alpha1
      kind: AuthentikUser
      namespaces: [auth]
    target:
      apiVersion: stalwart.weebo.io/v1alpha1
      kind: StalwartAccount
      namespace: mail
      name: { cel: source.metadata.name }
      spec:
        domainRef: { name: weebo.poc }
        name: { cel: source.spec.username }
        state: { cel: 'source.spec.isActive ? "Active" : "Locked"' }
        deletionPolicy: Orphan
      immutable: [spec.name]
    onRemoval:
      patch:
        spec: { state: Locked }
      safe:
        cel: >-
          target.spec.state == "Locked" && has(target.status) &&
          target.status.observedGeneration == target.metadata.generation &&
          target.status.conditions.exists(c, c.type == "Ready" && c.status == "True")
      then: Keep
`;

/** The example rule with its namespaces replaced (tests run in namespaces of their own). */
export function exampleRules(opts: {
  sourceNamespace: string;
  targetNamespace: string;
  name?: string;
  then?: 'Keep' | 'Delete';
}): string {
  let y = EXAMPLE_RULES_YAML.replace('namespaces: [auth]', `namespaces: [${opts.sourceNamespace}]`).replace(
    'namespace: mail',
    `namespace: ${opts.targetNamespace}`,
  );
  if (opts.name) y = y.replace('name: authentik-user-stalwart-account', `name: ${opts.name}`);
  if (opts.then) y = y.replace('then: Keep', `then: ${opts.then}`);
  return y;
}
