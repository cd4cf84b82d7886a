/** The root package.json's `engines.node`, as numbers. */
export declare const REQUIRED_NODE: { readonly major: number; readonly minor: number };
/** Whether `version` ("24.21.0", as `process.versions.node`) is in the range. */
export declare function nodeSatisfies(version: string): boolean;
/** Exits 1 with one line on standard error unless this Node is in the range. */
export declare function requireNode(command: string): void;
