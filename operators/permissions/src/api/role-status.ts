/**
 * RoleStatus, the status of UserRole and GroupRole: `ready` and the nested map
 * permissions → cluster id or `platform` → plugin → PluginObject.
 */

/** Where a plugin stands for one (permission, cluster). */
export type PluginApplyStatus = 'Applied' | 'Failed' | 'Pending' | 'Undefined' | 'Deleting' | 'Skipped';

/** An object a plugin wrote. */
export interface PluginObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
}

export interface PluginObject {
  readonly status: PluginApplyStatus;
  readonly message?: string;
  readonly objects?: readonly PluginObjectRef[];
}

/** The key for the management cluster in RoleStatus and `applied_to_clusters`. */
export const PLATFORM = 'platform';

export interface RoleStatus {
  readonly ready?: boolean;
  readonly message?: string;
  readonly permissions?: Readonly<
    Record<string, Readonly<Record<string, Readonly<Record<string, PluginObject>>>>>
  >;
  readonly observedGeneration?: number;
}
