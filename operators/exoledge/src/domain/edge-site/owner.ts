/**
 * What every object a site owns starts from: its namespace, its labels and the
 * controller reference to the site, so that the garbage collector removes what the
 * finalizer missed and the controller's `owns()` maps events back to the site.
 */
import { controllerReference, type KubeObject, type ObjectMeta, type OwnerReference } from '@operators/kit';
import type { EdgeSite } from '../../api/edge-site.ts';
import { API_VERSION, type OwnedKind } from './kinds.ts';
import { siteLabels } from './names.ts';

/** The site as its objects need it. */
export interface SiteRef {
  readonly name: string;
  readonly namespace: string;
  readonly owner: OwnerReference;
}

/**
 * @throws Error if `site` lacks a name, namespace or uid: the owner must be the object
 *   as read from the apiserver, not one about to be created.
 */
export function siteRef(site: EdgeSite): SiteRef {
  const { name, namespace } = site.metadata;
  if (!name || !namespace) {
    throw new Error(
      `cannot plan the objects of EdgeSite ${namespace ?? '(no namespace)'}/${name ?? '(unnamed)'}: ` +
        'it needs a name and a namespace; use the object as read from the apiserver',
    );
  }
  return { name, namespace, owner: controllerReference(site) };
}

/** An object of `kind` the site owns, in the site's namespace, labelled and owned. */
export function owned<T extends Record<string, unknown>>(
  site: SiteRef,
  kind: OwnedKind,
  name: string,
  body: T,
  extraLabels: Readonly<Record<string, string>> = {},
): KubeObject & T {
  const metadata: ObjectMeta = {
    name,
    namespace: site.namespace,
    labels: siteLabels(site.name, extraLabels),
    ownerReferences: [site.owner],
  };
  return { apiVersion: API_VERSION[kind], kind, metadata, ...body };
}
