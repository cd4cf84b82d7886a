/**
 * The bridge's one call to Kubernetes: a server-side apply of the manifest with
 * `dryRun=All`, so the apiserver runs everything a real apply would (defaulting, the
 * schema, the CEL rules, strict field validation, admission) and stores nothing. It is
 * the only request the bridge builds, and the only place that builds it; `dryRun=All`
 * is a constant of the query, not an option a caller could leave out.
 *
 * Server-side apply rather than create, as `kubectl apply --dry-run=server` in the seed:
 * a create of a site that already exists would answer AlreadyExists, and most domains the
 * console edits are live. `force` takes the fields from whoever owns them (Git's applier)
 * for the dry-run only, so a toggle never fails on a field-manager conflict.
 *
 * Caveat, as with kubectl: on an existing site, the apiserver validates the manifest
 * merged with the stored object; a field another manager owns and the manifest leaves
 * out stays in the validated object.
 *
 * No discovery either: the path is built from the EdgeSite's group, version and plural,
 * which this operator defines, so one request is all the bridge sends per answer.
 */
import type { Transport } from '@operators/kit';
import { GROUP, VERSION } from '../api/blocklist-source.ts';
import { EDGE_SITE_DEFINITION } from '../api/edge-site.ts';
import { classifyDryRun, type DryRun, type EdgeSiteManifest } from '../domain/bridge/index.ts';

/** The field manager of the dry-run applies: what the apiserver's audit log names. */
export const BRIDGE_FIELD_MANAGER = 'exoledge-console-bridge';

/** The query of every request: a dry-run, always. */
export const DRY_RUN_QUERY = {
  dryRun: 'All',
  fieldManager: BRIDGE_FIELD_MANAGER,
  fieldValidation: 'Strict',
  force: 'true',
} as const;

/**
 * A DryRun through `transport`. Never rejects: an unreachable apiserver or an unreadable
 * answer is a `NoVerdict`, which the bridge turns into a refusal.
 */
export function apiserverDryRun(transport: Pick<Transport, 'raw'>): DryRun {
  return async (manifest) => {
    try {
      const res = await transport.raw({
        method: 'PATCH',
        path: edgeSitePath(manifest),
        query: DRY_RUN_QUERY,
        body: manifest,
        contentType: 'application/apply-patch+yaml',
      });
      const text = await res.body.text();
      return classifyDryRun(res.status, parseJson(text));
    } catch (err) {
      return {
        kind: 'NoVerdict',
        message: `the apiserver is unreachable: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
  };
}

/**
 * The site's URL path. The record decoder has held the namespace and name to DNS shapes
 * (no `/`, no `..`); they are encoded all the same, so that no record can reach another path.
 */
function edgeSitePath(manifest: EdgeSiteManifest): string {
  const { namespace, name } = manifest.metadata;
  return (
    `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/` +
    `${EDGE_SITE_DEFINITION.plural}/${encodeURIComponent(name)}`
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
