/**
 * What the bridge answers, decided in two pure steps around its two reads: the
 * directory's entry for the host (`planManifest`: render, or refuse) and the apiserver's
 * dry-run verdict (`answerDryRun`: hand the manifest out, or refuse). The HTTP server in
 * src/bridge only parses the request, performs the reads, and writes the answer.
 */
import type { DirectoryEntry } from './directory.ts';
import type { DryRunResult } from './dry-run.ts';
import { BridgeReason } from './reasons.ts';
import { type EdgeSiteManifest, renderEdgeSite } from './render.ts';
import { type ToggleRequest, toggleSwitch } from './toggle.ts';

/** A refusal: no manifest, a reason (its HTTP status is `STATUS_OF[reason]`) and a message. */
export interface Refusal {
  readonly kind: 'Refusal';
  readonly reason: BridgeReason;
  readonly message: string;
}

export type Answer = { readonly kind: 'Manifest'; readonly manifest: EdgeSiteManifest } | Refusal;

/** Before the apiserver: a manifest to submit to the dry-run, or a refusal already. */
export type Plan = { readonly kind: 'DryRun'; readonly manifest: EdgeSiteManifest } | Refusal;

export function refusal(reason: BridgeReason, message: string): Refusal {
  return { kind: 'Refusal', reason, message };
}

/**
 * What to submit for `host`, given its directory entry and, for `POST /domains/security`,
 * the switch to set. The order of the refusals is the order a console can fix them in:
 * no record, then a record it must repair, then a switch the site's mode makes pointless.
 */
export function planManifest(host: string, entry: DirectoryEntry | undefined, toggle?: ToggleRequest): Plan {
  if (entry === undefined) {
    return refusal(BridgeReason.UnknownHost, `the console's directory has no record for ${host}`);
  }
  if (entry.kind === 'Malformed') {
    return refusal(
      BridgeReason.MalformedRecord,
      `the console's record for ${host} cannot be read: ${entry.problems.join('; ')}`,
    );
  }
  if (toggle === undefined) return { kind: 'DryRun', manifest: renderEdgeSite(entry.record) };
  const toggled = toggleSwitch(host, entry.record, toggle);
  switch (toggled.kind) {
    case 'CarriedBySharedEdge':
      return refusal(BridgeReason.CarriedBySharedEdge, toggled.message);
    case 'Toggled':
      return { kind: 'DryRun', manifest: renderEdgeSite(toggled.record) };
    default:
      return toggled satisfies never;
  }
}

/** After the dry-run: the manifest only when the apiserver accepted it. */
export function answerDryRun(manifest: EdgeSiteManifest, result: DryRunResult): Answer {
  const site = `EdgeSite ${manifest.metadata.namespace}/${manifest.metadata.name}`;
  switch (result.kind) {
    case 'Accepted':
      return { kind: 'Manifest', manifest };
    case 'Refused':
      return refusal(BridgeReason.DryRunRefused, result.message);
    case 'NoVerdict':
      return refusal(
        BridgeReason.DryRunFailed,
        `the apiserver could not validate ${site}, so no manifest is handed out: ${result.message}`,
      );
    default:
      return result satisfies never;
  }
}
