#!/usr/bin/env node
// The installed command. The code is TypeScript, run by Node's type stripping; this shim
// exists because npm links a bin as it is, and a `.js` entry runs under any launcher.
// Only the Node check is imported statically: on an older Node the other imports would
// fail before it could say why.
import { requireNode } from '@operators/kit/require-node';

requireNode('exoledge');
const { enableCompileCache } = await import('node:module');
// Stripping types and compiling our modules costs more than reading a small list; the
// cache (under the OS temp directory, or NODE_COMPILE_CACHE) makes it a one-time cost.
enableCompileCache();

// A reader that stops early (`exoledge aggregate list | head`) closes the pipe: the
// output is no longer wanted, which is no reason for a stack trace.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2), process);
