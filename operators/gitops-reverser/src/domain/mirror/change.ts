/**
 * The vocabulary the mirror decisions share: where an object lives in the API, and what a
 * commit does to one file. Plain data, so that the decisions stay free of I/O.
 */

/** A resource folder: everything of one resource in one namespace (or cluster-scoped). */
export interface ResourceCoordinates {
  /** The API group; `""` is the core group (Pods, Services, ConfigMaps …). */
  readonly group: string;
  /** The lowercase plural resource name, as in the API path (`deployments`). */
  readonly resource: string;
  /** Absent (or `""`) for a cluster-scoped object. */
  readonly namespace?: string;
}

/** One object: its resource folder and its name. */
export interface ObjectCoordinates extends ResourceCoordinates {
  readonly name: string;
}

/** What a commit did to one object's file, as the commit message lists it. */
export type ChangeOp = 'CREATE' | 'UPDATE' | 'DELETE';

/** A file to write (`content` is the new bytes) or to delete (`content` is null). */
export type FileChange = { readonly path: string; readonly content: string } | FileDeletion;

/** The deletion arm of {@link FileChange}, named so that callers can narrow to it. */
export interface FileDeletion {
  readonly path: string;
  readonly content: null;
}

/** Whether a file change deletes its file. */
export const isDeletion = (c: FileChange): c is FileDeletion => c.content === null;
