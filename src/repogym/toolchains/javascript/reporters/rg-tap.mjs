// repogym: node-tap (18 and newer) reporter (tap --reporter=<this file>). tap imports it
// into its own runner process, never into the test processes it spawns, and pipes the
// run's TAP through the stream class exported here: each test file's TAP, nested as a
// subtest named by the file. tap's own parser (tap-parser) reads it; every subtest that
// ends is one JSON line through rg-common ("test": file, then the titles of the subtests
// around it), so a run is read from the same report as every other runner's.
//
// What a test file prints is TAP the parent parses, so code under test can print points of
// its own; they stay inside that file's subtest, and the canary planted beside the file
// (a file of checks that must fail, in a process of its own) shows a file whose checks
// were neutralised, or that exited before its checks ran.
//
// A file's own assertions (outside any subtest) are its test "<file>"; a file that failed
// with none of its tests failing (it crashed on load, exited non-zero) is a file error;
// subtests still open when their file ended (a timeout, a crash) fail as having died there.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Transform } from 'node:stream';

const require = createRequire(import.meta.url);
const rg = require('./rg-common.cjs');
rg.load(); // now, before tap starts a test process: the settings file and variable go

function fromProject(name) {
  // tap-parser is tap's dependency: hoisted beside it (npm, yarn) or only inside it (pnpm)
  const chain = ['tap', '@tapjs/run', '@tapjs/reporter'];
  let req = createRequire(resolve('package.json'));
  for (let i = 0; i <= chain.length; i++) {
    try { return req(name); } catch (e) { /* deeper */ }
    if (i === chain.length) break;
    try { req = createRequire(req.resolve(chain[i])); } catch (e) { /* keep */ }
  }
  throw new Error(`repogym's tap reporter cannot load ${name} from the project`);
}

const { Parser } = fromProject('tap-parser');
let version = '';
try { version = fromProject('tap/package.json').version; } catch (e) { /* */ }

// a title as the test gave it: TAP escapes "\\" and "#" in names ("# Subtest: both \\\\")
const unescaped = (name) => String(name || '').replace(/\\([\\#])/g, '$1');

function text(value) {
  if (value === undefined) return 'undefined';
  try { return JSON.stringify(value); } catch (e) { return String(value); } // cycles
}

// "should be equal", then what tap says it found and wanted, and where
function failure(res) {
  const d = res.diag || {};
  const lines = [res.name || 'failed'];
  if (typeof d.diff === 'string' && d.diff) lines.push(d.diff.trimEnd());
  else if ('found' in d || 'wanted' in d) {
    if ('found' in d) lines.push('found: ' + text(d.found));
    if ('wanted' in d) lines.push('wanted: ' + text(d.wanted));
    if (d.compare) lines.push('compare: ' + d.compare);
  }
  if (d.message && d.message !== res.name) lines.push(String(d.message));
  if (d.stack) lines.push(String(d.stack).trimEnd());
  else if (d.at && d.at.fileName) lines.push(`at ${d.at.fileName}:${d.at.lineNumber}:${d.at.columnNumber}`);
  if (d.exitCode !== undefined && d.exitCode !== null) lines.push('exit code: ' + d.exitCode);
  if (d.signal) lines.push('signal: ' + d.signal);
  if (d.expired) lines.push('expired: ' + d.expired);
  return lines.join('\n').slice(0, 4000);
}

class Level {
  // one parser: the run (depth 0), a test file (1), a subtest in it (2, 3, ...)
  constructor(parser, titles, up) {
    this.parser = parser;
    this.titles = titles; // [file, subtest, ...] of this level
    this.up = up || null;
    this.open = []; // child levels whose summary point has not come
    this.complete = false; // its parser has ended: the next point of its parent closes it
    this.own = 0; // assertions of its own (not subtests)
    this.firstFailure = '';
    this.timedOut = false; // tap's "timeout!" point: its time ran out
    this.failedTests = 0; // tests failed inside it, at any depth
  }

  failedInside() {
    for (let up = this.up; up; up = up.up) up.failedTests += 1;
  }
}

// tap's own point for a test whose time ran out
const timeoutPoint = (res) => res.name === 'timeout!' && !!res.diag && 'expired' in res.diag;

export default class RepogymTapReporter extends Transform {
  constructor() {
    super();
    this.totals = { passed: 0, failed: 0, skipped: 0, errors: 0 };
    this.parser = new Parser();
    this.root = new Level(this.parser, []);
    rg.emit('start', { runner: 'tap', version });
    this.watch(this.root);
    this.parser.on('complete', () => this.finish());
  }

  _transform(chunk, encoding, done) {
    this.parser.write(chunk);
    done(null, chunk);
  }

  _flush(done) {
    this.parser.end();
    done();
  }

  finish() {
    for (const file of this.root.open.splice(0)) { // files that never ended (tap cut them)
      this.died(file, { name: 'the test file never ended', diag: {} });
      this.fileError(file.titles[0], 'the test file never ended');
    }
    rg.emit('finish', this.totals);
  }

  watch(level) {
    level.parser.on('child', (child) => {
      const kid = new Level(child, level.titles.concat([unescaped(child.name)]), level);
      level.open.push(kid);
      child.on('complete', () => { kid.complete = true; });
      if (kid.titles.length >= 2) {
        rg.emit('begin', { file: kid.titles[0], id: kid.titles.join(' > ') });
      }
      this.watch(kid);
    });
    level.parser.on('assert', (res) => this.point(level, res));
    level.parser.on('bailout', (reason) => {
      if (level === this.root) this.fileError('', 'bailed out: ' + String(reason || ''));
    });
  }

  point(level, res) {
    // the point that closes a subtest comes right after its parser completed (names do not
    // say: the "# Subtest:" line and the point escape a title's \\ and # differently)
    const i = level.open.findIndex((k) => k.complete);
    if (i < 0) this.own(level, res);
    else {
      const kid = level.open.splice(i, 1)[0];
      if (!kid.titles.at(-1)) kid.titles[kid.titles.length - 1] = unescaped(res.name);
      if (kid.titles.length === 1) this.fileEnded(kid, res);
      else this.subtestEnded(kid, res);
    }
  }

  own(level, res) {
    // an assertion of the level's own; skipped or todo subtests that never ran look the
    // same (no "# Subtest" before them) and are left out: they are no test to grade
    const failed = !res.ok && !res.todo && !res.skip;
    if (level === this.root) { // tap's own word on the run (a file it cut short)
      if (failed) this.fileError('', failure(res));
      return;
    }
    level.own += 1;
    if (failed && !level.firstFailure) level.firstFailure = failure(res);
    if (timeoutPoint(res)) level.timedOut = true;
  }

  subtestEnded(kid, res) {
    this.died(kid, res);
    const outcome = res.todo ? 'todo' : res.skip ? 'skipped' : res.ok ? 'passed' : 'failed';
    const message = outcome === 'failed' ? kid.firstFailure || failure(res) : '';
    this.test(kid.titles, outcome, res, message, outcome === 'failed' && kid.timedOut);
    if (outcome === 'failed') kid.failedInside();
  }

  fileEnded(file, res) {
    this.died(file, res);
    const failed = !res.ok && !res.todo && !res.skip;
    if (file.own > 0) { // the file's own assertions are its test "<file>"
      const outcome = res.skip ? 'skipped' : file.firstFailure ? 'failed' : 'passed';
      this.test(file.titles, outcome, res, file.firstFailure, file.timedOut);
      if (outcome === 'failed') return;
    }
    if (failed && file.failedTests === 0) this.fileError(file.titles[0], failure(res));
  }

  died(level, res) {
    // subtests still open when their parent ended: they died there (its time ran out, its
    // process was killed or crashed)
    const signal = res.diag && res.diag.signal;
    for (const kid of level.open.splice(0)) {
      this.died(kid, res);
      const message = 'the test file ended while this test ran: ' + failure(res);
      this.test(kid.titles, 'failed', {}, message, Boolean(signal) || kid.timedOut);
      kid.failedInside();
    }
  }

  fileError(file, message) {
    this.totals.errors += 1;
    rg.emit('file_error', { file, message });
  }

  test(titles, outcome, res, message, timedOut) {
    const key = outcome === 'todo' ? 'skipped' : outcome;
    this.totals[key] = (this.totals[key] || 0) + 1;
    rg.emit('test', {
      file: titles[0], titles: titles.slice(1), outcome,
      duration: rg.seconds(typeof res.time === 'number' ? res.time : 0),
      message: message || '', timed_out: Boolean(timedOut),
    });
  }
}
