/**
 * The link.weebo.io headers of RFC 0002: the opt-in annotation on a source, and the
 * labels and annotations weebo-link writes on a target. They are the whole state of a
 * link: weebo-link keeps none of its own, so a departure missed during an outage is
 * found again from a target's headers.
 */

export const HEADER_PREFIX = 'link.weebo.io/';
/** Label on a target: the rule that owns it. The selector of the controller, the policies and the alerts. */
export const LINK_LABEL = 'link.weebo.io/link';
/** Label on a target: where the link stands. */
export const STATE_LABEL = 'link.weebo.io/state';
/** Annotation on a target: the expected source, `<group>/<Kind>/<namespace>/<name>`. */
export const SOURCE_ANNOTATION = 'link.weebo.io/source';
/** Annotation on a target: the UID of the linked source (a recreated source is another source). */
export const SOURCE_UID_ANNOTATION = 'link.weebo.io/source-uid';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'weebo-link';
/** The only value a source's opt-in header may have: the header has no parameter. */
export const ENABLED = 'enabled';

/** Names a rule's header may not take: they are the target's own headers. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set(['link', 'state', 'source', 'source-uid']);

export const LinkState = {
  /** The target follows its source. */
  Linked: 'Linked',
  /** The source left; the safe-state patch is applied and `safe` is not yet true. */
  Detaching: 'Detaching',
  /** The target is in its safe state and kept, without a source; it may be reattached. */
  Detached: 'Detached',
} as const;
export type LinkState = (typeof LinkState)[keyof typeof LinkState];

export function isLinkState(v: unknown): v is LinkState {
  return v === LinkState.Linked || v === LinkState.Detaching || v === LinkState.Detached;
}

/** The field manager of one rule's applies: weebo-link owns only what its mapping states. */
export function fieldManagerOf(link: string): string {
  return `weebo-link/${link}`;
}

/** The annotation a source carries to opt in to links of `header`. */
export function headerAnnotation(header: string): string {
  return `${HEADER_PREFIX}${header}`;
}
