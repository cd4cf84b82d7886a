#!/usr/bin/env node
// The controlplane command (`controlplane build`, `controlplane version`). The code is
// TypeScript, run by Node's type stripping: the Node check comes first, since on an older
// Node importing a `.ts` file fails with ERR_UNKNOWN_FILE_EXTENSION, which does not say why.
import { requireNode } from '@operators/kit/require-node';

requireNode('controlplane');
await import('../src/cli.ts');
