/**
 * The console bridge's decisions, pure: the console's record of a domain (`DomainRecord`,
 * read by `decodeRecord` from its directory), the EdgeSite it renders (`renderEdgeSite`),
 * a switch toggled or refused on a shared edge (`toggleSwitch`), and the answer once the
 * apiserver's dry-run has judged the manifest (`planManifest`, `answerDryRun`). The HTTP
 * service (src/bridge) reads the directory, calls the apiserver, and writes the answers.
 */
export { type Answer, answerDryRun, type Plan, planManifest, type Refusal, refusal } from './answer.ts';
export { type DecodedRecord, decodeRecord } from './decode-record.ts';
export {
  type DirectoryContents,
  type DirectoryEntry,
  type DomainDirectory,
  readDirectory,
} from './directory.ts';
export { classifyDryRun, type DryRun, type DryRunResult } from './dry-run.ts';
export { type ParsedHost, parseHost } from './host.ts';
export { BridgeReason, STATUS_OF } from './reasons.ts';
export type { ConsoleSwitches, DomainRecord, SiteRef } from './record.ts';
export { type EdgeSiteManifest, renderEdgeSite } from './render.ts';
export {
  type ParsedToggle,
  parseToggle,
  type ToggleOutcome,
  type ToggleRequest,
  toggleSwitch,
} from './toggle.ts';
