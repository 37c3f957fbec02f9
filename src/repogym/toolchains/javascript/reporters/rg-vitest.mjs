// repogym: vitest reporter (--reporter=<this file>): every test of the run, with its outcome.
import { createRequire } from 'module';

const require = createRequire(import.meta.url);
const rg = require('./rg-common.cjs');

const TIMEOUT = /timed out in \d+ ?ms/i;
const STATES = { pass: 'passed', fail: 'failed', skip: 'skipped', todo: 'todo' };

export default class RepogymVitestReporter {
  constructor() {
    rg.load();
    this.version = '';
  }

  onInit(ctx) {
    this.version = (ctx && ctx.version) || '';
    rg.emit('start', { runner: 'vitest', version: this.version });
  }

  onTestCaseReady(testCase) {  // vitest 3
    const file = rg.relFile(testCase.module && testCase.module.moduleId);
    const titles = [];
    for (let s = testCase.parent; s && s.type === 'suite'; s = s.parent) titles.unshift(s.name);
    rg.emit('begin', { file, id: [file].concat(titles, [testCase.name]).join(' > ') });
  }

  onFinished(files, errors) {
    const totals = { passed: 0, failed: 0, skipped: 0, errors: 0 };
    for (const file of files || []) {
      const name = rg.relFile(file.filepath);
      const failed = file.result && file.result.state === 'fail';
      if (failed && (file.result.errors || []).length) {
        totals.errors += 1;
        rg.emit('file_error', { file: name, message: rg.message(file.result.errors) });
      }
      this._walk(file.tasks || [], [], name, totals);
    }
    for (const err of errors || []) {
      totals.errors += 1;
      rg.emit('file_error', { file: '', message: rg.message(err) });
    }
    rg.emit('finish', totals);
  }

  _walk(tasks, titles, file, totals) {
    for (const task of tasks) {
      if (task.type === 'suite') {
        this._walk(task.tasks || [], titles.concat([task.name]), file, totals);
        continue;
      }
      const result = task.result || {};
      const outcome = STATES[result.state] || (task.mode === 'skip' || task.mode === 'todo'
        ? 'skipped' : 'failed');
      const message = rg.message(result.errors || []);
      if (outcome === 'passed') totals.passed += 1;
      else if (outcome === 'failed') totals.failed += 1;
      else totals.skipped += 1;
      rg.emit('test', { file, titles: titles.concat([task.name]), outcome,
        duration: rg.seconds(result.duration), message, timed_out: TIMEOUT.test(message) });
    }
  }
}
