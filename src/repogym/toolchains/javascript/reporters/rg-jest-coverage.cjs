// repogym: jest reporter for coverage maps (--reporters=<this file>, in a run with --coverage
// and --coverageProvider=v8). Jest collects coverage per test file (each file has its own
// module registry); this reporter hands each file's coverage alone to jest's own
// CoverageReporter, which converts it exactly as it would for a run of that file by itself
// (V8 ranges to istanbul, through the transformer's source maps to the original lines), and
// appends one JSON line per test file to <coverageDirectory>/per-file.jsonl:
//   {"file": <the test file's path>, "statements": {<source path>: [[first, last, count]...]}}
// Dependencies' files are left out. A file it cannot convert gets no line (measured apart).
'use strict';
const fs = require('fs');
const path = require('path');

const REPORTERS_MODULE = /[\\/]@jest[\\/]reporters[\\/]build[\\/]index\.js$/;

function jestCoverageReporter() {
  // the @jest/reporters jest itself loaded: its CoverageReporter runs in this process
  for (const file of Object.keys(require.cache)) {
    if (!REPORTERS_MODULE.test(file)) continue;
    const exported = require.cache[file].exports;
    if (exported && typeof exported.CoverageReporter === 'function') return exported.CoverageReporter;
  }
  return null;
}

function statements(map) {
  const out = {};
  for (const file of Object.keys(map)) {
    if (file.split(path.sep).includes('node_modules')) continue;
    const entry = map[file] || {};
    const where = entry.statementMap || {};
    const counts = entry.s || {};
    const rows = [];
    for (const key of Object.keys(where)) {
      const s = where[key];
      if (s && s.start && s.end) rows.push([s.start.line, s.end.line, counts[key] || 0]);
    }
    out[entry.path || file] = rows;
  }
  return out;
}

class RepogymJestCoverage {
  constructor(globalConfig) {
    this.globalConfig = globalConfig;
    this.root = globalConfig.coverageDirectory;
    this.count = 0;
  }

  async onTestResult(test, result) {
    if (!this.root || !(result.v8Coverage || result.coverage)) return;
    const Reporter = jestCoverageReporter();
    if (!Reporter) return;
    const dir = path.join(this.root, 'per-file', String(this.count++));
    const config = Object.assign({}, this.globalConfig, {
      coverageDirectory: dir, coverageReporters: ['json'], coverageThreshold: undefined,
      collectCoverageFrom: [] });
    try {
      const reporter = new Reporter(config, {});
      reporter.onTestResult(test, result);
      await reporter.onRunComplete(new Set(), {});
      const map = JSON.parse(fs.readFileSync(path.join(dir, 'coverage-final.json'), 'utf8'));
      fs.appendFileSync(path.join(this.root, 'per-file.jsonl'),
        JSON.stringify({ file: test.path, statements: statements(map) }) + '\n');
    } catch (err) {
      // not converted: the file is measured by a run of its own
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  getLastError() { return undefined; }
}

module.exports = RepogymJestCoverage;
