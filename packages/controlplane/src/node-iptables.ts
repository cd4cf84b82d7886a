/**
 * What a node leaves in the machine's iptables, and how to remove exactly that: the chains
 * kube-proxy and the kubelet make (`KUBE-`), the CNI plugins' (`CNI-`), the node's own
 * (`KOT-`), and the rules of other chains that jump to them. Pure: it reads the output of
 * `iptables-save -t <table>` and returns the `iptables` argument lists to run, in order
 * (rules that jump first, then flush every owned chain, then delete them, since a chain
 * that is still referenced or not empty cannot be deleted). Rules of anyone else are never
 * touched.
 */

/** The chain name prefixes a node owns. */
export const OWNED_CHAIN_PREFIXES = ['KUBE-', 'CNI-', 'KOT-'] as const;

/** The node's own chain in `filter`, jumped to first from FORWARD: pods reach only the bridge. */
export const NODE_FORWARD_CHAIN = 'KOT-NODE-FORWARD';

function owned(chain: string): boolean {
  return OWNED_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}

/**
 * Splits a rule as iptables-save prints it: words, and double-quoted strings (comments)
 * with `\"` and `\\` escapes.
 */
export function splitRule(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    if (line[i] === ' ') {
      i++;
      continue;
    }
    let word = '';
    if (line[i] === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length) i++;
        word += line[i];
        i++;
      }
      i++;
    } else {
      while (i < line.length && line[i] !== ' ') word += line[i++];
    }
    out.push(word);
  }
  return out;
}

/** The `iptables` argument lists that remove everything owned from one table's save output. */
export function iptablesTeardown(save: string): string[][] {
  let table = '';
  const chains: string[] = [];
  const deletes: string[][] = [];
  for (const raw of save.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('*')) table = line.slice(1);
    else if (line.startsWith(':')) {
      const chain = line.slice(1).split(' ')[0] ?? '';
      if (owned(chain)) chains.push(chain);
    } else if (line.startsWith('-A ')) {
      const words = splitRule(line);
      const chain = words[1] ?? '';
      if (owned(chain)) continue;
      const target = words.findIndex((w, i) => (w === '-j' || w === '-g') && i > 1);
      const to = target >= 0 ? words[target + 1] : undefined;
      if (to !== undefined && owned(to)) deletes.push(['-t', table, '-D', chain, ...words.slice(2)]);
    }
  }
  if (!table) return [];
  return [
    ...deletes,
    ...chains.map((c) => ['-t', table, '-F', c]),
    ...chains.map((c) => ['-t', table, '-X', c]),
  ];
}
