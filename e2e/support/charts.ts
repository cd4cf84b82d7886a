/**
 * Every operator's chart as the node suite and `npm run up -- --node` install it, in the
 * order they are installed.
 */
import { exoledgeOnNode } from '../exoledge.ts';
import { gitopsReverserOnNode } from '../gitops-reverser.ts';
import { permissionsOnNode } from '../permissions.ts';
import { terdutOnNode } from '../terdut.ts';
import { weeboLinkOnNode } from '../weebo-link.ts';
import type { ChartUnderTest } from './chart-checks.ts';

export const NODE_CHARTS: readonly ChartUnderTest[] = [
  weeboLinkOnNode,
  exoledgeOnNode,
  gitopsReverserOnNode,
  terdutOnNode,
  permissionsOnNode,
];
