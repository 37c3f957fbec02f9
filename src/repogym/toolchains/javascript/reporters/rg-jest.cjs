// repogym: jest reporter (--reporters=<this file>): one JSON line per test as it finishes.
'use strict';
const rg = require('./rg-common.cjs');

const TIMEOUT = /Exceeded timeout of \d+ ?ms for a (test|hook)/;

class RepogymJestReporter {
  constructor(globalConfig) {
    rg.load();
    this.errors = 0;
    let version = '';
    try { version = require('jest/package.json').version; } catch (e) { /* not resolvable */ }
    rg.emit('start', { runner: 'jest', version: version });
  }

  onTestCaseStart(test, info) {
    if (!info) return;
    rg.emit('begin', { file: rg.relFile(test.path),
      id: [rg.relFile(test.path)].concat(info.ancestorTitles || [], [info.title]).join(' > ') });
  }

  onTestFileResult(test, result) { this._file(test, result); }

  onTestResult(test, result) {
    this._file(test, result);
  }

  _file(test, result) {
    this._seen = this._seen || new Set();
    if (this._seen.has(test.path)) return;
    this._seen.add(test.path);
    const file = rg.relFile(test.path);
    if (result.testExecError || (result.failureMessage && !(result.testResults || []).length)) {
      this.errors += 1;
      rg.emit('file_error', { file: file,
        message: rg.message(result.testExecError || result.failureMessage) });
    }
    for (const t of result.testResults || []) {
      const msg = rg.message(t.failureMessages || []);
      rg.emit('test', { file: file, titles: (t.ancestorTitles || []).concat([t.title]),
        outcome: t.status === 'pending' ? 'skipped' : t.status, duration: rg.seconds(t.duration),
        message: msg, timed_out: TIMEOUT.test(msg) });
    }
  }

  onRunComplete(contexts, results) {
    rg.emit('finish', { passed: results.numPassedTests, failed: results.numFailedTests,
      skipped: results.numPendingTests + (results.numTodoTests || 0),
      errors: results.numRuntimeErrorTestSuites });
  }

  getLastError() { return undefined; }
}

module.exports = RepogymJestReporter;
