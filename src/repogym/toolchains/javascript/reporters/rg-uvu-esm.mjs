// repogym: ESM hooks (registered by rg-uvu.cjs via module.register, Node >= 20.6).
// `import ... from 'uvu'` in user code is redirected to a generated shim module (one per
// importing file, the file travels in the query) that re-exports uvu's wrapped API.
// The shim must import the real module statically: with top-level await, uvu's non-CLI
// auto-run (Promise.resolve().then(exec)) would fire before the test file had registered anything.
const SHIM = 'file:///repogym-uvu-shim.mjs';

export async function resolve(specifier, context, next) {
  const parent = context.parentURL || '';
  if (specifier === 'uvu' && !parent.startsWith(SHIM) && !/[\\/]node_modules[\\/]uvu[\\/]/.test(parent)) {
    const real = await next(specifier, context);
    if (real.format && real.format !== 'module') return real; // CJS build: the CJS patch covers it
    const q = new URLSearchParams({real: real.url, file: parent});
    return {url: SHIM + '?' + q.toString(), format: 'module', shortCircuit: true};
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith(SHIM + '?')) return next(url, context);
  const q = new URL(url).searchParams;
  const source = `
import * as real from ${JSON.stringify(q.get('real'))};
import { fileURLToPath } from 'node:url';
let file = null;
try { file = fileURLToPath(${JSON.stringify(q.get('file'))}); } catch (e) {}
const R = globalThis.__REPOGYM_UVU__;
const w = R ? R.wrapModule(real, file) : real;
export const suite = w.suite;
export const test = w.test;
export const exec = w.exec;
export const QUEUE = real.QUEUE;
`;
  return {format: 'module', source, shortCircuit: true};
}
