/**
 * Our lines in Argo CD's `policy.csv` (the `argocd-rbac-cm` ConfigMap), merged into text
 * that people and other tools also write. Every line of someone else survives byte for
 * byte and in order; ours live in one block per owner, between two comment lines:
 *
 *     # BEGIN permissions.shturval.tech <ns>/<Kind>/<name>/<permission>
 *     p, alice@example.com, applications, get, team-a/*, allow
 *     # END permissions.shturval.tech <ns>/<Kind>/<name>/<permission>
 *
 * Argo CD skips lines starting with `#` (util/rbac: each line is trimmed, then empty and
 * `#` lines are ignored), so the markers cost nothing. The owner id carries the
 * Permission as well as the role: the plugin is called once per (role, permission), and
 * one role's permissions must not replace each other's lines. Every part of the id is a
 * Kubernetes name (no `/`, no spaces), so the id cannot be mistaken for another one.
 *
 * Trailing newline: Argo CD does not care, but getting back exactly the text others
 * wrote does. A block appended to text that does not end with a newline is written as
 * `\n# BEGIN ...\n...\n# END ...` (it brings the separating newline and leaves the text
 * as unterminated as it found it); a block whose END line is the text's unterminated
 * last line therefore owns the newline before its BEGIN line, and takes it along when
 * it is removed. With that rule, removing every block of ours gives back the foreign
 * text exactly, whatever order blocks were added and removed in.
 *
 * A BEGIN marker without its END (before another marker of ours or the end of the text)
 * is not a block: it is left alone as a foreign line, so a hand-truncated block never
 * makes us delete the lines after it.
 */

import type { ArgoCdPolicy } from '../../api/permission.ts';

/** The word after `# BEGIN` / `# END` that says the block is this operator's. */
export const POLICY_MARKER = 'permissions.shturval.tech';
const BEGIN = `# BEGIN ${POLICY_MARKER} `;
const END = `# END ${POLICY_MARKER} `;

/** Who owns one block: a UserRole or GroupRole and one of its Permissions. */
export interface PolicyOwner {
  readonly kind: 'UserRole' | 'GroupRole';
  readonly namespace: string;
  readonly name: string;
  readonly permission: string;
}

/** The id written after the marker: `<ns>/<Kind>/<name>/<permission>`. */
export function policyOwnerId(o: PolicyOwner): string {
  return `${o.namespace}/${o.kind}/${o.name}/${o.permission}`;
}

/** A line of the text: its content (without the newline) and whether a newline ended it. */
interface Line {
  readonly text: string;
  readonly terminated: boolean;
}

function splitLines(text: string): Line[] {
  if (text === '') return [];
  const parts = text.split('\n');
  const last = parts.pop() ?? '';
  const lines: Line[] = parts.map((p) => ({ text: p, terminated: true }));
  if (last !== '') lines.push({ text: last, terminated: false });
  return lines;
}

function joinLines(lines: readonly Line[]): string {
  return lines.map((l) => (l.terminated ? `${l.text}\n` : l.text)).join('');
}

/** A marker line's kind and owner id, or undefined for any other line. A `\r` left by CRLF text is ignored. */
function markerOf(line: string): { begin: boolean; id: string } | undefined {
  const l = line.endsWith('\r') ? line.slice(0, -1) : line;
  if (l.startsWith(BEGIN)) return { begin: true, id: l.slice(BEGIN.length) };
  if (l.startsWith(END)) return { begin: false, id: l.slice(END.length) };
  return undefined;
}

/** One well-formed block: the indexes of its BEGIN and END lines. */
interface Block {
  readonly id: string;
  readonly begin: number;
  readonly end: number;
}

/** Every well-formed block: a BEGIN line and the END line of the same id with no other marker between. */
function blocksOf(lines: readonly Line[]): Block[] {
  const blocks: Block[] = [];
  let open: { id: string; begin: number } | undefined;
  lines.forEach((line, i) => {
    const m = markerOf(line.text);
    if (!m) return;
    if (m.begin) {
      open = { id: m.id, begin: i };
    } else {
      if (open && open.id === m.id) blocks.push({ id: m.id, begin: open.begin, end: i });
      open = undefined;
    }
  });
  return blocks;
}

/**
 * `existing` with `owner`'s block replaced by `lines`: in place when the block exists,
 * appended when it does not, removed when `lines` is empty. Every other line is kept
 * byte for byte and in order; a second block of the same owner (a copy made by hand) is
 * removed too. `lines` must not contain line breaks ({@link policyLines} ensures it).
 */
export function mergePolicyCsv(
  existing: string | undefined,
  owner: PolicyOwner,
  lines: readonly string[],
): string {
  const id = policyOwnerId(owner);
  const all = splitLines(existing ?? '');
  const ours = blocksOf(all).filter((b) => b.id === id);
  const body = (terminatedEnd: boolean): Line[] => [
    { text: `${BEGIN}${id}`, terminated: true },
    ...lines.map((text) => ({ text, terminated: true })),
    { text: `${END}${id}`, terminated: terminatedEnd },
  ];

  const out: Line[] = [];
  let next = 0;
  let placed = false;
  for (const b of ours) {
    out.push(...all.slice(next, b.begin));
    const endLine = all[b.end] as Line;
    if (!endLine.terminated && !placed && lines.length > 0) {
      // The last block of unterminated text: replaced with the same shape.
      out.push(...body(false));
      placed = true;
    } else if (!endLine.terminated) {
      // Removed while it ends the text: it takes the newline it brought along.
      const before = out.pop();
      if (before) out.push({ text: before.text, terminated: false });
    } else if (!placed && lines.length > 0) {
      out.push(...body(true));
      placed = true;
    }
    next = b.end + 1;
  }
  out.push(...all.slice(next));

  if (!placed && lines.length > 0) {
    const last = out.pop();
    if (last && !last.terminated) {
      out.push({ text: last.text, terminated: true }, ...body(false));
    } else {
      if (last) out.push(last);
      out.push(...body(true));
    }
  }
  return joinLines(out);
}

/** Why a value cannot be one column of a policy line; undefined when it can. */
export function policyFieldError(value: string): string | undefined {
  if (value === '') return 'is empty';
  // Argo CD splits the text on newlines before parsing a line as CSV, so no quoting
  // carries a line break; other control characters would be trimmed or misread.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'contains a line break or another control character';
  return undefined;
}

/**
 * One column as Go's encoding/csv reads it with TrimLeadingSpace (Argo CD's parser): a
 * value holding a comma or a quote, or starting or ending with a space, is quoted, and
 * its quotes doubled.
 */
export function csvField(value: string): string {
  if (/[,"]/.test(value) || /^\s|\s$/.test(value)) return `"${value.replaceAll('"', '""')}"`;
  return value;
}

export type PolicyLines =
  | { readonly kind: 'ok'; readonly lines: readonly string[] }
  | { readonly kind: 'invalid'; readonly message: string };

/**
 * `p, <subject>, <resource>, <action>, <object>, allow` for each policy. The subject is
 * the user name, or the group name for a group (Argo CD matches it against the token's
 * `sub` and groups claims). Duplicate lines are written once.
 */
export function policyLines(subject: string, policies: readonly ArgoCdPolicy[]): PolicyLines {
  const fields: [string, string][] = [['subject', subject]];
  policies.forEach((p, i) => {
    fields.push([`policies[${i}].resource`, p.resource], [`policies[${i}].action`, p.action]);
    fields.push([`policies[${i}].object`, p.object]);
  });
  for (const [what, value] of fields) {
    const err = policyFieldError(value);
    if (err) return { kind: 'invalid', message: `Argo CD policy ${what} ${JSON.stringify(value)} ${err}` };
  }
  const lines = policies.map((p) =>
    ['p', subject, p.resource, p.action, p.object, 'allow'].map(csvField).join(', '),
  );
  return { kind: 'ok', lines: [...new Set(lines)] };
}
