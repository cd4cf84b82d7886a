/**
 * Why the bridge answers a request with something other than a manifest: the closed set
 * of reasons of its error bodies (`{reason, message}`), each with the one HTTP status it
 * is sent with (`STATUS_OF`). The console branches on the reason; people read the message.
 */
import { FeatureReason } from '../edge-site/reasons.ts';

export const BridgeReason = {
  /** The query has no `host`, several, or one that is not a host name (a scheme, a path, a port). */
  BadHost: 'BadHost',
  /** The body of `POST /domains/security` is not `{switch, enabled}` with a known switch and a boolean. */
  BadToggle: 'BadToggle',
  /** The console's directory has no record for the host: nothing to render. */
  UnknownHost: 'UnknownHost',
  /**
   * The directory has a record for the host but the bridge cannot read it (a missing
   * switch, a field of the wrong type, an unknown field): the message lists every problem,
   * for the console to fix its record. Values are not judged here (that is `DryRunRefused`).
   */
  MalformedRecord: 'MalformedRecord',
  /**
   * A switch toggled on a site that joins a shared gateway: the shared edge carries the
   * WAF, the challenge, the sensitive files and the lists for every site on it, so the
   * site's switch would change nothing, and the bridge refuses to write a spec without
   * effect. The same reason `status.features` gives for such a site, on purpose: the
   * console shows one explanation, wherever it read it.
   */
  CarriedBySharedEdge: FeatureReason.CarriedBySharedEdge,
  /**
   * The apiserver refused the manifest at its dry-run (a CEL rule, the schema, strict
   * field validation): the message is the apiserver's, which names the field and what to
   * write instead. No manifest is handed out: one that cannot be applied must not reach Git.
   */
  DryRunRefused: 'DryRunRefused',
  /**
   * The apiserver gave no verdict: unreachable, the EdgeSite CRD not installed, the
   * bridge not allowed, the site's namespace missing. No manifest is handed out: an
   * unchecked manifest is exactly what the dry-run exists to prevent.
   */
  DryRunFailed: 'DryRunFailed',
  /** A path the bridge does not serve. */
  NoSuchEndpoint: 'NoSuchEndpoint',
  /** A served path asked with another method (the `Allow` header lists the right one). */
  MethodNotAllowed: 'MethodNotAllowed',
  /** A request body over the bridge's limit; a toggle is a few dozen bytes. */
  BodyTooLarge: 'BodyTooLarge',
  /** A bug of the bridge's: logged with its stack, answered without it. */
  InternalError: 'InternalError',
} as const;
export type BridgeReason = (typeof BridgeReason)[keyof typeof BridgeReason];

/** The HTTP status of each refusal. */
export const STATUS_OF: Readonly<Record<BridgeReason, number>> = {
  BadHost: 400,
  BadToggle: 400,
  UnknownHost: 404,
  MalformedRecord: 422,
  // The seed's choice: the request conflicts with the state of the site (its mode).
  CarriedBySharedEdge: 409,
  DryRunRefused: 422,
  // The bridge is a gateway to the apiserver, which failed it.
  DryRunFailed: 502,
  NoSuchEndpoint: 404,
  MethodNotAllowed: 405,
  BodyTooLarge: 413,
  InternalError: 500,
};
