/**
 * Where each object's file lives in the repository:
 * `{targetPath}/{namespace or _cluster}/{group}/{resource}/{name}.yaml`, the group left out
 * for the core group, `.sops.yaml` for an encrypted file. The layout is readable by a person
 * and reversible, so that a sweep can tell which files are object files of a folder and
 * which (a README, a kustomization) are someone else's.
 */
import type { ObjectCoordinates, ResourceCoordinates } from './change.ts';
import { REPOSITORY_ROOT, validateTargetPath } from './target-path.ts';

/** The folder of cluster-scoped objects: `_` cannot start a namespace name, so it never clashes. */
export const CLUSTER_SCOPED_DIR = '_cluster';

/** The suffix of a plain object file. */
export const PLAIN_FILE_SUFFIX = '.yaml';

/** The suffix of a SOPS-encrypted object file. */
export const ENCRYPTED_FILE_SUFFIX = '.sops.yaml';

/** An object file's coordinates, and whether its name says it is encrypted. */
export interface ParsedObjectFile extends ObjectCoordinates {
  readonly encrypted: boolean;
}

/** An RFC 1123 label: a namespace, a resource (plural) name, one part of a group. */
const DNS_LABEL = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$/;
/** The longest RFC 1123 label. */
const DNS_LABEL_MAX = 63;
/** The longest RFC 1123 subdomain (an API group). */
const DNS_SUBDOMAIN_MAX = 253;

const isDnsLabel = (s: string): boolean => s.length <= DNS_LABEL_MAX && DNS_LABEL.test(s);
const isDnsSubdomain = (s: string): boolean =>
  s.length <= DNS_SUBDOMAIN_MAX && s.split('.').every((part) => isDnsLabel(part));

/**
 * Any name the apiserver accepts for some resource is a valid path segment name: not `.`
 * or `..`, no `/` or `%` (RBAC names such as `system:controller:x` have colons). Checked
 * here too, because a name is also a file name, and `..` would leave the folder.
 */
export const isObjectName = (s: string): boolean =>
  s !== '' && s !== '.' && s !== '..' && !s.includes('/') && !s.includes('%');

/** Why a coordinate cannot be a folder or file name; undefined when all are fine. */
function coordinatesProblem(o: ResourceCoordinates): string | undefined {
  if (o.group !== '' && !isDnsSubdomain(o.group))
    return `group ${JSON.stringify(o.group)} is not a DNS subdomain`;
  if (!isDnsLabel(o.resource)) return `resource ${JSON.stringify(o.resource)} is not a lowercase DNS label`;
  if (o.namespace && !isDnsLabel(o.namespace))
    return `namespace ${JSON.stringify(o.namespace)} is not a DNS label`;
  return undefined;
}

function prefixSegments(targetPath: string): string[] {
  const check = validateTargetPath(targetPath);
  if (!check.ok) throw new Error(`invalid target path ${JSON.stringify(targetPath)}: ${check.message}`);
  return targetPath === REPOSITORY_ROOT ? [] : [targetPath];
}

/**
 * The folder of one resource in one namespace (or of a cluster-scoped resource): the
 * folder a sweep covers. Throws on coordinates the apiserver would never produce, because
 * each of them becomes a folder name.
 */
export function resourceDir(targetPath: string, r: ResourceCoordinates): string {
  const problem = coordinatesProblem(r);
  if (problem) throw new Error(`invalid object coordinates: ${problem}`);
  const segments = prefixSegments(targetPath);
  segments.push(r.namespace || CLUSTER_SCOPED_DIR);
  if (r.group !== '') segments.push(r.group);
  segments.push(r.resource);
  return segments.join('/');
}

/**
 * The file of one object, relative to the repository root (no `./`). A namespace of `""`
 * is cluster-scoped, as in the API. Throws on coordinates the apiserver would never produce.
 */
export function objectFilePath(targetPath: string, o: ObjectCoordinates, encrypted: boolean): string {
  if (!isObjectName(o.name)) throw new Error(`invalid object coordinates: name ${JSON.stringify(o.name)}`);
  return `${resourceDir(targetPath, o)}/${o.name}${encrypted ? ENCRYPTED_FILE_SUFFIX : PLAIN_FILE_SUFFIX}`;
}

/**
 * The object a file belongs to, or undefined when `filePath` is not an object file under
 * `targetPath`. Pass `encrypted` when it is known: without it a file ending in
 * `.sops.yaml` reads as encrypted, so an unencrypted object named `x.sops` comes back as
 * the encrypted object `x` (the only name for which the layout is ambiguous).
 */
export function parseObjectFilePath(
  targetPath: string,
  filePath: string,
  encrypted?: boolean,
): ParsedObjectFile | undefined {
  if (!validateTargetPath(targetPath).ok) return undefined;
  let rest = filePath;
  if (targetPath !== REPOSITORY_ROOT) {
    if (!filePath.startsWith(`${targetPath}/`)) return undefined;
    rest = filePath.slice(targetPath.length + 1);
  }
  const segments = rest.split('/');
  if (segments.length !== 3 && segments.length !== 4) return undefined;
  const [nsDir = '', ...others] = segments;
  const file = others.pop() ?? '';
  const resource = others.pop() ?? '';
  const group = others.pop() ?? '';
  if (segments.length === 4 && group === '') return undefined;
  const namespace = nsDir === CLUSTER_SCOPED_DIR ? undefined : nsDir;
  if (namespace !== undefined && !isDnsLabel(namespace)) return undefined;
  if (coordinatesProblem({ group, resource })) return undefined;

  const isEncrypted = encrypted ?? file.endsWith(ENCRYPTED_FILE_SUFFIX);
  const suffix = isEncrypted ? ENCRYPTED_FILE_SUFFIX : PLAIN_FILE_SUFFIX;
  if (!file.endsWith(suffix)) return undefined;
  const name = file.slice(0, -suffix.length);
  if (!isObjectName(name)) return undefined;
  return namespace === undefined
    ? { group, resource, name, encrypted: isEncrypted }
    : { group, resource, namespace, name, encrypted: isEncrypted };
}
