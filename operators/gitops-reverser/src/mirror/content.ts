/**
 * What one object becomes in Git: its file path and its bytes. Plain YAML for every
 * kind but Secrets; a Secret only SOPS-encrypted for the target's age recipients, never
 * in plaintext (without `spec.encryption` it is refused, not written).
 */
import type { KubeObject } from '@operators/kit';
import { objectFilePath } from '../domain/mirror/file-path.ts';
import { sanitize, toYaml } from '../domain/mirror/sanitize.ts';
import { encryptSecret, sameSecretContent } from '../sops/index.ts';

/** Where a target writes, and how. */
export interface ContentPolicy {
  readonly targetPath: string;
  /** Absent: Secrets are refused. */
  readonly encryption?: {
    readonly recipients: readonly string[];
    /** Age identities to read back existing files (so an unchanged Secret is not rewritten); may be empty. */
    readonly identities: readonly string[];
  };
}

export interface ResourceRef {
  readonly group: string;
  readonly resource: string;
}

export function isSecretResource(r: ResourceRef): boolean {
  return r.group === '' && r.resource === 'secrets';
}

/** The file of `obj` of resource `r`. */
export function filePathOf(policy: ContentPolicy, r: ResourceRef, obj: KubeObject): string {
  return objectFilePath(
    policy.targetPath,
    {
      group: r.group,
      resource: r.resource,
      ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
      name: obj.metadata.name ?? '',
    },
    isSecretResource(r) && policy.encryption !== undefined,
  );
}

/** The sanitized document, the thing compared to decide whether an update changed anything. */
export function sanitizedText(obj: KubeObject): string {
  return toYaml(sanitize(obj as unknown as Record<string, unknown>));
}

/**
 * The file's new bytes, or undefined when `existing` already says the same (so nothing
 * is written: an encrypted file is never rewritten for fresh IVs alone).
 */
export async function renderFile(
  policy: ContentPolicy,
  r: ResourceRef,
  obj: KubeObject,
  existing: string | undefined,
): Promise<string | undefined> {
  const doc = sanitize(obj as unknown as Record<string, unknown>);
  if (!isSecretResource(r)) {
    const text = toYaml(doc);
    return text === existing ? undefined : text;
  }
  const enc = policy.encryption;
  if (!enc) throw new Error('a Secret is never written in plaintext: the GitTarget has no spec.encryption');
  if (existing !== undefined && enc.identities.length > 0) {
    try {
      if (await sameSecretContent(existing, doc, enc.identities, { recipients: enc.recipients }))
        return undefined;
    } catch {
      // An existing file we cannot read back (another key, corrupted): rewrite it.
    }
  }
  return encryptSecret(doc, { recipients: enc.recipients });
}
