#!/usr/bin/env node
// The installed command (`weebo-link check-rules`, `weebo-link run`). The code is
// TypeScript, run by Node's type stripping; npm links a bin as it is, so this shim is .js.
// Only the Node check is imported statically: on an older Node the other imports would
// fail before it could say why.
import { requireNode } from '@operators/kit/require-node';

requireNode('weebo-link');
const { enableCompileCache } = await import('node:module');
enableCompileCache();

process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2), process);
