#!/usr/bin/env node
// The kube-cel command: runs the TypeScript CLI directly (Node 24 strips the types).
// The Node check first: on an older Node, importing a `.ts` file fails with
// ERR_UNKNOWN_FILE_EXTENSION, which does not say that Node is the cause.
import { requireNode } from '@operators/kit/require-node';

requireNode('kube-cel');
await import('../src/cli.ts');
