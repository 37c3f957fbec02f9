// repogym: vitest reporter (--reporter=<this file>): every test of the run, with its outcome.
// Vitest 3 and 4: the test-module API (onTestCaseReady, onTestRunEnd); vitest 1 and 2:
// onFinished(files). A module that fails to import or collect has no tests and only its
// errors: a file_error line.
import { createRequire } from 'module';

const require = createRequire(import.meta.url);
const rg = require('./rg-common.cjs');

const TIMEOUT = /timed out in \d+ ?ms/i;
const LEGACY = { pass: 'passed', fail: 'failed', skip: 'skipped', todo: 'todo' };

export default class RepogymVitestReporter {
  constructor() {
    rg.load();
    this.started = false;
    this.finished = false;
    this.totals = { passed: 0, failed: 0, skipped: 0, errors: 0 };
  }

  onInit(ctx) {
    this._start((ctx && ctx.version) || '');
  }

  _start(version) {
    if (this.started) return;
    this.started = true;
    rg.emit('start', { runner: 'vitest', version });
  }

  onTestCaseReady(testCase) {  // vitest 3+
    const file = rg.relFile(testCase.module && testCase.module.moduleId);
    rg.emit('begin', { file, id: [file].concat(this._titles(testCase)).join(' > ') });
  }

  onTestRunEnd(modules, errors) {  // vitest 3+
    this._start('');
    for (const mod of modules || []) {
      const file = rg.relFile(mod.moduleId);
      for (const testCase of mod.children.allTests()) this._case(file, testCase);
      const failed = typeof mod.errors === 'function' ? mod.errors() : [];
      if (failed.length) this._fileError(file, failed);
    }
    for (const err of errors || []) this._fileError('', [err]);
    this._finish();
  }

  onFinished(files, errors) {  // vitest 1 and 2 (3 calls it too, after onTestRunEnd)
    if (this.finished) return;
    this._start('');
    for (const file of files || []) {
      const name = rg.relFile(file.filepath);
      if (file.result && file.result.state === 'fail' && (file.result.errors || []).length) {
        this._fileError(name, file.result.errors);
      }
      this._walk(file.tasks || [], [], name);
    }
    for (const err of errors || []) this._fileError('', [err]);
    this._finish();
  }

  _titles(testCase) {
    const titles = [testCase.name];
    for (let s = testCase.parent; s && s.type === 'suite'; s = s.parent) titles.unshift(s.name);
    return titles;
  }

  _case(file, testCase) {
    const result = testCase.result();
    let outcome = { passed: 'passed', failed: 'failed' }[result.state] || 'skipped';
    if (result.state === 'skipped' && testCase.options && testCase.options.mode === 'todo') {
      outcome = 'todo';
    }
    const diagnostic = typeof testCase.diagnostic === 'function' ? testCase.diagnostic() : null;
    this._test(file, this._titles(testCase), outcome, diagnostic && diagnostic.duration,
      outcome === 'failed' ? result.errors : []);
  }

  _walk(tasks, titles, file) {
    for (const task of tasks) {
      if (task.type === 'suite') {
        this._walk(task.tasks || [], titles.concat([task.name]), file);
        continue;
      }
      const result = task.result || {};
      const outcome = LEGACY[result.state] || (task.mode === 'skip' || task.mode === 'todo'
        ? 'skipped' : 'failed');
      this._test(file, titles.concat([task.name]), outcome, result.duration, result.errors);
    }
  }

  _test(file, titles, outcome, duration, errors) {
    const message = rg.message(errors || []);
    if (outcome === 'passed') this.totals.passed += 1;
    else if (outcome === 'failed') this.totals.failed += 1;
    else this.totals.skipped += 1;
    rg.emit('test', { file, titles, outcome, duration: rg.seconds(duration), message,
      timed_out: TIMEOUT.test(message) });
  }

  _fileError(file, errors) {
    this.totals.errors += 1;
    rg.emit('file_error', { file, message: rg.message(errors) });
  }

  _finish() {
    if (this.finished) return;
    this.finished = true;
    rg.emit('finish', this.totals);
  }
}
