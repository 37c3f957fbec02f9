// repogym: mocha reporter (--reporter <this file>): one JSON line per test as it finishes.
'use strict';
const rg = require('./rg-common.cjs');

const TIMEOUT = /Timeout of \d+ ?ms exceeded/;

function titles(test) {
  if (typeof test.titlePath === 'function') return test.titlePath();
  const out = [];
  for (let t = test; t && !t.root; t = t.parent) out.unshift(t.title);
  return out;
}

function RepogymMochaReporter(runner) {
  rg.load();
  const totals = { passed: 0, failed: 0, skipped: 0, errors: 0 };
  let version = '';
  try { version = require(require.resolve('mocha/package.json', { paths: [process.cwd()] })).version; } catch (e) { /* */ }
  rg.emit('start', { runner: 'mocha', version });

  function id(test) { return [rg.relFile(test.file)].concat(titles(test)).join(' > '); }
  function done(test, outcome, err) {
    const message = rg.message(err);
    rg.emit('test', { file: rg.relFile(test.file), titles: titles(test), outcome,
      duration: rg.seconds(test.duration), message, timed_out: TIMEOUT.test(message) });
  }

  runner.on('test', (test) => rg.emit('begin', { file: rg.relFile(test.file), id: id(test) }));
  runner.on('pass', (test) => { totals.passed += 1; done(test, 'passed'); });
  runner.on('pending', (test) => { totals.skipped += 1; done(test, 'skipped'); });
  runner.on('fail', (test, err) => {
    if (test.type === 'hook') {
      totals.errors += 1;
      rg.emit('file_error', { file: rg.relFile(test.file || (test.parent && test.parent.file)),
        message: test.title + ': ' + rg.message(err) });
      return;
    }
    totals.failed += 1;
    done(test, 'failed', err);
  });
  runner.once('end', () => rg.emit('finish', totals));
}

module.exports = RepogymMochaReporter;
