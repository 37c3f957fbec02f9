// repogym: reporter for node's own test runner (node --test --test-reporter=<this file>).
// A reporter is an async generator over the run's events; this one yields nothing and
// writes repogym's JSON lines itself (rg-common.cjs). With --test each file is reported as a
// top-level test named by its path: a failure there with no test inside it is a file that
// did not load.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const rg = require('./rg-common.cjs');

const TIMEOUT = /timed out after \d+ ?ms|test timed out/i;

function errorText(error) {
  if (!error) return '';
  return rg.message(error.cause || error);
}

export default async function* repogymNodeTestReporter(source) {
  rg.load();
  rg.emit('start', { runner: 'node-test', version: process.version });
  const totals = { passed: 0, failed: 0, skipped: 0, errors: 0 };
  const stderr = new Map();
  const stack = [];
  for await (const event of source) {
    const d = event.data || {};
    if (event.type === 'test:stderr' && d.file) {
      stderr.set(d.file, ((stderr.get(d.file) || '') + d.message).slice(-4000));
      continue;
    }
    if (event.type === 'test:start') {
      stack[d.nesting] = d.name;
      stack.length = d.nesting + 1;
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const details = d.details || {};
    const file = rg.relFile(d.file);
    if (d.nesting === 0 && d.file && path.resolve(d.name) === path.resolve(d.file)) {
      if (event.type === 'test:fail') {
        totals.errors += 1;
        rg.emit('file_error', { file, message: errorText(details.error) + '\n'
          + (stderr.get(d.file) || '') });
      }
      continue;
    }
    if (details.type === 'suite') continue;  // describe() blocks hold tests, are none
    let outcome = event.type === 'test:pass' ? 'passed' : 'failed';
    if (d.skip !== undefined) outcome = 'skipped';
    if (d.todo !== undefined) outcome = 'todo';
    if (outcome === 'passed') totals.passed += 1;
    else if (outcome === 'failed') totals.failed += 1;
    else totals.skipped += 1;
    const message = outcome === 'failed' ? errorText(details.error) : '';
    rg.emit('test', { file, titles: stack.slice(0, d.nesting).concat([d.name]), outcome,
      duration: rg.seconds(details.duration_ms), message, timed_out: TIMEOUT.test(message) });
  }
  rg.emit('finish', totals);
}
