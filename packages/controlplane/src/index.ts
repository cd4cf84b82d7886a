export {
  type Binaries,
  cacheRoot,
  obtain,
  type PlaneBinaries,
  resolveBinaries,
  resolvePlaneBinaries,
} from './binaries.ts';
export {
  type ControllerManagerOptions,
  DEFAULT_CONTROLLERS,
  KcmController,
} from './controller-manager.ts';
export {
  ControlPlane,
  type ControlPlaneOptions,
  NODE_CONTROLLERS,
  type PlaneNodeOptions,
} from './controlplane.ts';
export { installCrds } from './crds.ts';
export { ControlPlaneError } from './errors.ts';
export { type GoOptions, type GoRun, runGo } from './go.ts';
export {
  type GoCommand,
  type GoModuleTool,
  type GoTool,
  goModuleTool,
  goToolBinary,
  type ToolLog,
} from './go-tool.ts';
export type { LocalContext, LocalRunner } from './local-runner.ts';
export { withLock } from './lock.ts';
export { NODE_DIR, Node } from './node.ts';
export { type NodeBinaries, resolveNodeBinaries } from './node-binaries.ts';
export { NODE_ADDRESSES } from './node-config.ts';
export { forceStopAll, liveChildren } from './process.ts';
export { type CrdDocument, type ThirdParty, thirdPartyCrds } from './third-party-crds.ts';
export { ETCD_VERSION, HELM_VERSION, KUBERNETES_VERSION, THIRD_PARTY_MODULES } from './versions.ts';
