/**
 * CRDs of the systems our operators write to (Cilium, Gateway API, cert-manager,
 * Istio, Zalando, Cluster API, Argo CD), read at set-up time from the Go modules those
 * projects publish. Nothing is vendored here: the module cache holds them, and a
 * version bump is one line in versions.ts. Our objects are then validated by the
 * real schemas, so a misspelt Cilium field fails a test instead of a production apply.
 */
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ControlPlaneError } from './errors.ts';
import { downloadModule } from './go.ts';
import { THIRD_PARTY_MODULES } from './versions.ts';

export type ThirdParty = keyof typeof THIRD_PARTY_MODULES;

export interface CrdDocument {
  readonly apiVersion: 'apiextensions.k8s.io/v1';
  readonly kind: 'CustomResourceDefinition';
  readonly metadata: { readonly name: string; readonly [k: string]: unknown };
  readonly spec: {
    readonly group: string;
    readonly names: { readonly kind: string; readonly plural: string };
    readonly scope: 'Namespaced' | 'Cluster';
    readonly versions: readonly {
      readonly name: string;
      readonly served: boolean;
      readonly storage: boolean;
    }[];
    readonly [k: string]: unknown;
  };
  readonly [k: string]: unknown;
}

interface Source {
  /** Files inside the module. */
  readonly files: readonly string[];
  /** Every matching file of a folder inside the module. */
  readonly folder?: { readonly path: string; readonly pattern: RegExp };
  /** Keep only these kinds (a file may hold many). */
  readonly kinds?: readonly string[];
}

const SOURCES: Record<ThirdParty, Source> = {
  cilium: {
    files: [
      'pkg/k8s/apis/cilium.io/client/crds/v2/ciliumcidrgroups.yaml',
      'pkg/k8s/apis/cilium.io/client/crds/v2/ciliumclusterwidenetworkpolicies.yaml',
    ],
  },
  // The whole standard channel; the folder also holds a ValidatingAdmissionPolicy
  // (vap_safeupgrades), which is not a CRD and is skipped by kind below.
  gatewayApi: {
    files: [],
    folder: { path: 'config/crd/standard', pattern: /^gateway\.networking\.k8s\.io_.*\.yaml$/ },
  },
  certManager: {
    files: ['deploy/crds/cert-manager.io_certificates.yaml', 'deploy/crds/cert-manager.io_issuers.yaml'],
  },
  istio: {
    files: ['kubernetes/customresourcedefinitions.gen.yaml'],
    kinds: ['EnvoyFilter', 'WasmPlugin', 'AuthorizationPolicy', 'DestinationRule'],
  },
  zalando: { files: ['manifests/postgresql.crd.yaml'] },
  clusterApi: { files: ['core/config/crd/bases/cluster.x-k8s.io_clusters.yaml'] },
  argoCd: { files: ['manifests/crds/appproject-crd.yaml'] },
};

/** Reads the CRDs of one third-party system from its Go module (downloaded on first use). */
export async function thirdPartyCrds(which: ThirdParty): Promise<CrdDocument[]> {
  const { module, version } = THIRD_PARTY_MODULES[which];
  const source = SOURCES[which];
  const mod = await downloadModule(module, version, tmpdir());
  const out: CrdDocument[] = [];
  const files = [...source.files];
  if (source.folder) {
    const { path, pattern } = source.folder;
    for (const f of (await readdir(join(mod.dir, path))).sort())
      if (pattern.test(f)) files.push(join(path, f));
  }
  for (const file of files) {
    const path = join(mod.dir, file);
    const text = await readFile(path, 'utf8').catch(() => {
      throw new ControlPlaneError(
        `${module}@${version} has no ${file}.`,
        'the project moved its CRDs; update the path in packages/controlplane/src/third-party-crds.ts.',
      );
    });
    for (const doc of parseAllDocuments(text)) {
      const crd = doc.toJS() as CrdDocument | null;
      if (crd?.kind !== 'CustomResourceDefinition') continue;
      if (source.kinds && !source.kinds.includes(crd.spec.names.kind)) continue;
      out.push(crd);
    }
  }
  if (source.kinds) {
    const missing = source.kinds.filter((k) => !out.some((c) => c.spec.names.kind === k));
    if (missing.length) {
      throw new ControlPlaneError(
        `${module}@${version} lacks the CRDs for ${missing.join(', ')}.`,
        'check the version in packages/controlplane/src/versions.ts.',
      );
    }
  }
  return out;
}
