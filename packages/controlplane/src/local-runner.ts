/**
 * What `npm run up` (scripts/up.ts) gives each operator's local runner
 * (`operators/<name>/src/local.ts`, exporting `runLocal`), declared once here so that the
 * runners and up agree on it; product code, beside `installCrds` (crds.ts).
 */
import type { KubeClient, ManagerOptions } from '@operators/kit';

export interface LocalContext {
  readonly kubeconfigPath: string;
  readonly client: KubeClient;
  /** One line for the terminal, prefixed with up's tag and the operator's name. */
  readonly log: (message: string) => void;
  /** The operator's logger: up prints its lines readable, not as pino's JSON. */
  readonly logger?: ManagerOptions['logger'];
}

/** A local runner's module: starts the operator and its samples, returns how to stop them. */
export interface LocalRunner {
  runLocal(ctx: LocalContext): Promise<{ stop(): Promise<void> }>;
}
