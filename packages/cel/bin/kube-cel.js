#!/usr/bin/env node
// The kube-cel command: runs the TypeScript CLI directly (Node 24 strips the types).
import '../src/cli.ts';
