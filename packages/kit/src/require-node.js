// The Node.js the project's commands need, checked by each command's shim before it
// imports anything else. On an older Node the first import of a newer API fails at link
// time with a SyntaxError that names no version ("does not provide an export named
// 'enableCompileCache'"), and a `.ts` file with ERR_UNKNOWN_FILE_EXTENSION: this says
// which Node is needed and how to run the pinned one. Plain JavaScript, and nothing in it
// newer than Node 12, so that every Node still in use reads it.

/** The root package.json's `engines.node` (">=24.11 <25"), as numbers; a test keeps them equal. */
export const REQUIRED_NODE = { major: 24, minor: 11 };

/** Whether `version` ("24.21.0", as `process.versions.node`) is in the range. */
export function nodeSatisfies(version) {
  const [major, minor] = version.split('.').map(Number);
  return major === REQUIRED_NODE.major && minor >= REQUIRED_NODE.minor;
}

/** Exits 1 with one line on standard error unless this Node is in the range. */
export function requireNode(command) {
  if (nodeSatisfies(process.versions.node)) return;
  const { major, minor } = REQUIRED_NODE;
  process.stderr.write(
    `${command} needs Node.js ${major}.${minor} or a later ${major}.x, and this is ${process.version}: ` +
      `run it as npx ${command} (or npm exec ${command}) in the repository, which runs the Node that npm ci ` +
      `installed (node_modules/.bin/node)\n`,
  );
  process.exit(1);
}
