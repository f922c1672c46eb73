import { fileURLToPath } from 'node:url';

/**
 * Where the project's files are, for those that load files or modules at run time (the config's
 * defaults, the browser phone's page, worker threads). This file runs from `src/paths.ts` (tests,
 * through the test runner's transform) or from `dist/src/paths.js` (the build). Both resolve to the same
 * project root.
 */
const fromSource = import.meta.url.endsWith('.ts');

export const PROJECT_ROOT = fileURLToPath(new URL(fromSource ? '../' : '../../', import.meta.url));

/** The compiled JavaScript of a module under `src/`, e.g. for a worker thread, which cannot run TS. */
export function compiledModule(pathUnderSrc: string): URL {
  return new URL(`dist/src/${pathUnderSrc}`, `file://${PROJECT_ROOT}`);
}
