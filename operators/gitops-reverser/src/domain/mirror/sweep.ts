/**
 * Deleting files whose objects are gone. Events alone miss deletions that happened while
 * the operator was down, so after a complete initial snapshot of a resource the files of
 * its folder are compared with the snapshot (mark and sweep). Whether a missing object's
 * file is deleted is the target's choice:
 *
 * - `Always`: files without an object are deleted by the sweep, and on a delete event;
 * - `OnEvent`: only a delete event deletes a file; the sweep reports the others, keeps them;
 * - `Never`: nothing is ever deleted; the sweep reports what it would have deleted.
 *
 * Only object files of the swept folder are ever candidates: a README, any file not ending
 * in `.yaml`, or a file in a sub-folder is someone else's and is never touched. A `.yaml`
 * file directly in a resource folder is taken for an object file: that folder belongs to
 * the operator.
 */
import type { ResourceCoordinates } from './change.ts';
import { parseObjectFilePath } from './file-path.ts';

/** A target's deletion policy. */
export type DeletionMode = 'Never' | 'OnEvent' | 'Always';

/** The deletion policies, for validation and CRD enums. */
export const DELETION_MODES: readonly DeletionMode[] = ['Never', 'OnEvent', 'Always'];

export interface SweepInput {
  /** The target's path (valid; `.` for the root). */
  readonly targetPath: string;
  /** The swept folder: one resource in one namespace, or a cluster-scoped resource. */
  readonly folder: ResourceCoordinates;
  /** The files found in the folder, as paths from the repository root. */
  readonly filesInDir: readonly string[];
  /** The file paths of every object in the complete snapshot (as objectFilePath gives them). */
  readonly snapshotPaths: ReadonlySet<string>;
  readonly mode: DeletionMode;
}

/** What the sweep does: files to delete, and files without an object that are kept. Both sorted. */
export interface SweepPlan {
  readonly delete: string[];
  readonly retained: string[];
}

/** Whether `filePath` is an object file (plain or encrypted) directly in `folder`. */
function isObjectFileOf(targetPath: string, folder: ResourceCoordinates, filePath: string): boolean {
  const parsed = parseObjectFilePath(targetPath, filePath);
  return (
    parsed !== undefined &&
    parsed.group === folder.group &&
    parsed.resource === folder.resource &&
    (parsed.namespace ?? '') === (folder.namespace ?? '')
  );
}

/**
 * The sweep of one folder after a complete snapshot: object files with no object in the
 * snapshot are deleted under `Always` and retained (to be reported) otherwise. A file whose
 * object is in the snapshot is never in either list. A file in the old layout of a changed
 * encryption setting (`x.yaml` once `x.sops.yaml` is written) has no object in the snapshot
 * and is swept like any other.
 */
export function sweepPlan(input: SweepInput): SweepPlan {
  const orphans = [...new Set(input.filesInDir)]
    .filter((f) => !input.snapshotPaths.has(f) && isObjectFileOf(input.targetPath, input.folder, f))
    .sort();
  return input.mode === 'Always' ? { delete: orphans, retained: [] } : { delete: [], retained: orphans };
}

/** Whether a delete event for an object deletes its file: under `OnEvent` and `Always`. */
export const eventDeleteAllowed = (mode: DeletionMode): boolean => mode !== 'Never';
