'use strict';
// repogym: uvu recorder (uvu has no reporter API), loaded first in uvu's process through
// NODE_OPTIONS="--require <this file>". Written for uvu 0.3 and 0.5 (lukeed+dequal and
// lukeed+kleur use 0.3 with `-r esm`).
//
// uvu keeps its tests in closure-private arrays, so the public API is wrapped instead:
//  * CommonJS (and `-r esm`, which installs its own require): Module._load and
//    Module.prototype.require are hooked; when uvu's dist/index.js loads, its `suite`, `test`
//    and `exec` exports are replaced by wrappers (test files read them at their own require
//    time). Test files uvu's CLI loads are tracked, so each suite knows its file and a file
//    that throws while loading is a file_error.
//  * Native ESM: module.register() adds a resolve hook (rg-uvu-esm.mjs) that sends `import
//    'uvu'` to a shim re-exporting the wrapped API.
//  * Each wrapped suite gets a first `before` hook (suite start) and a last `after` hook (suite
//    end); the wrappers of handlers and hooks attribute errors to the running test, so the
//    outcome is uvu's own, hooks included. Tests that never ran because a hook threw are
//    failed ("did not run"): uvu 0.3 drops them silently and may still exit 0.
//  * The run's settings (report, nonce, selection, per-test timeout) come from rg-common.cjs;
//    a test not in the selection is never registered with uvu (uvu has no name filter).
//  * The finish line is written when uvu's exec() has run every suite, not at exit: a run
//    that a test ends early (process.exit) has no finish and is not believed.
const fs = require('fs');
const path = require('path');
const Module = require('module');
const {pathToFileURL} = require('url');

// Only the process running uvu's CLI records (NODE_OPTIONS is inherited by child processes and by
// the ESM loader-hooks thread); set REPOGYM_UVU_ANY=1 to record in `node test/file.js` runs too.
const IS_UVU = /(\.bin[\\/]uvu$|uvu[\\/]bin\.js$)/i.test(process.argv[1] || '');
if (IS_UVU && require('worker_threads').isMainThread && !globalThis.__REPOGYM_UVU__) {
  const rg = require('./rg-common.cjs');
  const CONFIG = rg.load();
  const ROOT = CONFIG.root || process.cwd();
  const MAX_MSG = 4000;
  const TIMEOUT = Number(CONFIG.test_timeout_ms) || 0;
  // eslint-disable-next-line no-control-regex
  const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f]/; // what prints as nothing
  const VALUES = 'rg-values: '; // read by repogym/toolchains/javascript/failures.py
  const NOISE = /^\s+at .*(node_modules|node:internal|\(<anonymous>\)|uvu-record\.cjs|repogym-uvu-shim\.mjs|[\\/]rg-[\w.-]+\.c?m?js)/;
  const SELECT = Array.isArray(CONFIG.select) ? new Set(CONFIG.select) : null;
  const EXCLUDE = new Set(Array.isArray(CONFIG.exclude) ? CONFIG.exclude : []);
  const emit = (obj) => {
    const event = obj.event;
    const fields = Object.assign({}, obj);
    delete fields.event;
    rg.emit(event, fields);
  };
  const trim = (s) => {
    s = String(s || '').replace(ANSI, '').split('\n').filter((l) => !NOISE.test(l)).join('\n').trim();
    return s.length > MAX_MSG ? s.slice(0, MAX_MSG) + '…[truncated]' : s;
  };
  const errText = (e) => {
    if (!e) return String(e);
    let msg = (e.name ? e.name + ': ' : '') + (e.message || String(e));
    if (e.operator) msg += ' (' + e.operator + ')';
    if (typeof e.details === 'string' && e.details) msg += '\n' + e.details; // uvu/assert diff
    // two strings that differ in characters the diff cannot show (kleur's colour codes: the
    // ANSI stripping below would leave two equal-looking sides): both sides, JSON-escaped
    const expects = typeof e === 'object' && 'expects' in e ? e.expects : e.expected;
    if (typeof e.actual === 'string' && typeof expects === 'string' && e.actual !== expects
        && (HIDDEN.test(e.actual) || HIDDEN.test(expects))) {
      msg += '\n' + VALUES + JSON.stringify({actual: e.actual.slice(0, 400),
                                             expected: expects.slice(0, 400)});
    }
    const stack = String(e.stack || '');
    const frames = stack.split('\n').filter((l) => /^\s+at /.test(l)).join('\n');
    return trim(msg + (frames ? '\n' + frames : ''));
  };
  const rel = (f) => (f ? path.relative(ROOT, f).split(path.sep).join('/') : null);
  const testId = (file, titles) => [file || '?', ...titles].join(' > ');

  const totals = {passed: 0, failed: 0, skipped: 0, todo: 0, file_errors: 0};
  const T0 = Date.now();
  let loadingFile = null; // absolute path of the test file uvu's CLI is loading right now
  let execStarted = false;
  let finished = false;
  let active = null; // the suite run currently executing (uvu runs suites strictly one by one)
  let registered = 0; // suite runs queued (suite.run() calls) ...
  let ended = 0; // ... and those that ran to their end

  function record(file, titles, outcome, duration, message) {
    totals[outcome]++;
    emit({event: 'test', file, titles, outcome, duration: rg.seconds(duration),
      message: message || '', timed_out: /repogym: test timed out/.test(message || '')});
  }

  // ----- one execution of one suite (snapshot taken when the test file calls suite.run()) -----
  function makeRun(S, file) {
    const run = {
      file, name: S.name, bEach: S.bEach, skips: S.skips.slice(),
      arr: S.only.length ? S.only.slice() : S.tests.slice(),
      notRun: S.only.length ? S.tests.slice() : [],
      idx: -1, err: null, t: 0, suiteErr: null,
      titles(name) { return this.name ? [this.name, name] : [name]; },
      begin() {
        this.settle();
        this.idx++;
        this.err = null;
        this.t = process.hrtime.bigint();
        if (this.idx < this.arr.length) {
          emit({event: 'begin', id: testId(file, this.titles(this.arr[this.idx]))});
        }
      },
      settle() {
        if (this.idx < 0 || this.idx >= this.arr.length || this.settled === this.idx) return;
        this.settled = this.idx;
        const ms = Number(process.hrtime.bigint() - this.t) / 1e6;
        record(file, this.titles(this.arr[this.idx]), this.err ? 'failed' : 'passed', ms,
          this.err ? errText(this.err) : '');
      },
      fail(err) { if (!this.err) this.err = err; },
      end() {
        this.settle(); // the test being run when the suite stopped (if any)
        const why = this.suiteErr ? 'test did not run: a before hook failed: ' + errText(this.suiteErr)
          : 'test did not run (the suite was aborted, e.g. by a failing after.each hook)';
        for (let i = this.idx + 1; i < this.arr.length; i++) {
          record(file, this.titles(this.arr[i]), 'failed', null, why);
        }
        for (const n of this.notRun) record(file, this.titles(n), 'skipped', null, 'not in test.only');
        for (const n of this.skips) record(file, this.titles(n), 'skipped', null, '');
        this.skips = []; this.notRun = []; this.arr = [];
      },
    };
    return run;
  }

  function withTimeout(p) {
    if (!TIMEOUT || !p || typeof p.then !== 'function') return p;
    let timer;
    const t = new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error(`repogym: test timed out after ${TIMEOUT}ms`)), TIMEOUT);
    });
    return Promise.race([p, t]).finally(() => clearTimeout(timer));
  }

  // ----- wrap the `test` function of one uvu suite -----
  function wrapTest(orig, suiteName, fixedFile) {
    if (!orig || orig.__repogym) return orig;
    const S = {name: suiteName || '', tests: [], only: [], skips: [], bEach: 0, runs: []};
    const fileNow = () => fixedFile || loadingFile || stackFile();
    const reset = () => {
      S.tests = []; S.only = []; S.skips = []; S.bEach = 0;
      // first `before` hook: marks the suite as the active one
      orig.before(function repogymSuiteStart() {
        execStarted = true;
        active = S.runs.shift() || null;
      });
    };
    const wrapFn = (kind, fn, hookIdx) => async function (state) {
      const run = active;
      if (run) {
        if (kind === 'test' && run.bEach === 0) run.begin();
        if (kind === 'bEach' && hookIdx === 0) run.begin();
      }
      try {
        return await (kind === 'test' ? withTimeout(fn(state)) : fn(state));
      } catch (err) {
        if (run) {
          if (kind === 'before') run.suiteErr = run.suiteErr || err;
          else if (kind !== 'after') run.fail(err);
        }
        throw err;
      }
    };
    const selected = (name) => {
      const id = testId(rel(fileNow()), S.name ? [S.name, name] : [name]);
      return (!SELECT || SELECT.has(id)) && !EXCLUDE.has(id);
    };
    const t = function (name, handler) {
      if (!selected(name)) return;
      S.tests.push(name);
      return orig(name, wrapFn('test', handler));
    };
    t.only = function (name, handler) {
      if (!selected(name)) return;
      S.only.push(name);
      return orig.only(name, wrapFn('test', handler));
    };
    t.skip = function (name, handler) {
      if (selected(name)) S.skips.push(name);
      return orig.skip(name, handler);
    };
    t.before = (fn) => orig.before(wrapFn('before', fn));
    t.before.each = (fn) => orig.before.each(wrapFn('bEach', fn, S.bEach++));
    t.after = (fn) => orig.after(wrapFn('after', fn));
    t.after.each = (fn) => orig.after.each(wrapFn('aEach', fn));
    t.run = function () {
      const run = makeRun(S, rel(fileNow()));
      S.runs.push(run);
      registered += 1;
      // last `after` hook: the suite is over (uvu runs `after` hooks in a finally block)
      orig.after(function repogymSuiteEnd() {
        if (active === run) { run.end(); active = null; }
        ended += 1;
      });
      const r = orig.run();
      reset();
      return r;
    };
    t.__repogym = true;
    reset();
    return t;
  }

  function stackFile() {
    const lines = String(new Error().stack).split('\n');
    for (const l of lines) {
      const m = /\(?((?:file:\/\/)?\/[^():]+):\d+:\d+\)?$/.exec(l.trim());
      if (!m) continue;
      const f = m[1].replace(/^file:\/\//, '');
      if (f === __filename || /[\\/]node_modules[\\/]|repogym-uvu-shim\.mjs/.test(f)) continue;
      return f;
    }
    return null;
  }

  function wrapModule(uvu, fixedFile) {
    // returns {suite, test, exec} wrappers around a real uvu module namespace/exports
    const suite = (name, state) => wrapTest(uvu.suite(name, state), name, fixedFile);
    const test = wrapTest(uvu.test, '', fixedFile);
    const exec = async function (bail) {
      execStarted = true;
      return uvu.exec(bail);
    };
    return {suite, test, exec};
  }

  const api = {wrapModule, emit, errText, rel, setLoading: (f) => { loadingFile = f; }};
  globalThis.__REPOGYM_UVU__ = api;

  emit({event: 'start', runner: 'uvu', version: ''});

  // ----- CommonJS: patch uvu/dist/index.js exports when first loaded, track test files -----
  const UVU_MAIN = /[\\/]uvu[\\/]dist[\\/]index\.js$/;
  const UVU_LOADER = /[\\/]uvu[\\/](bin\.js|run[\\/]index\.js)$/;
  function patchUvu(exp, request, parent, isMain) {
    if (!exp || exp.__repogymPatched || typeof exp.suite !== 'function' || typeof exp.exec !== 'function') return;
    let file = null;
    try { file = Module._resolveFilename(request, parent, isMain); } catch (e) { /* ignore */ }
    if (!file || !UVU_MAIN.test(file)) return;
    patchExports(exp, file);
  }
  function patchExports(exp, file) {
    if (!exp || exp.__repogymPatched || typeof exp.suite !== 'function') return;
    try {
      const w = wrapModule(Object.assign({}, exp), null);
      exp.suite = w.suite; exp.test = w.test; exp.exec = w.exec;
      exp.__repogymPatched = true;
      const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(file), '..', 'package.json'), 'utf8'));
      emit({event: 'runner_info', runner: 'uvu', version: pkg.version});
    } catch (e) {
      emit({event: 'file_error', file: null, message: 'repogym could not wrap uvu: ' + errText(e)});
    }
  }
  // Both Module._load and Module.prototype.require are wrapped: `-r esm` replaces
  // Module.prototype.require with its own loader, so whichever was installed first may be bypassed.
  function hooked(orig, request, parent, isMain, self, args) {
    const fromCli = parent && parent.filename && UVU_LOADER.test(parent.filename) &&
      typeof request === 'string' && path.isAbsolute(request);
    if (!fromCli || loadingFile === request) {
      const exp = orig.apply(self, args);
      patchUvu(exp, request, parent, isMain);
      return exp;
    }
    const prev = loadingFile;
    loadingFile = request;
    try {
      return orig.apply(self, args);
    } catch (err) {
      totals.file_errors++;
      emit({event: 'file_error', file: rel(request), message: errText(err)});
      throw err;
    } finally {
      loadingFile = prev;
    }
  }
  const origLoad = Module._load;
  Module._load = function (request, parent, isMain) {
    return hooked(origLoad, request, parent, isMain, this, arguments);
  };
  const origRequire = Module.prototype.require;
  Module.prototype.require = function (request) {
    return hooked(origRequire, request, this, false, this, arguments);
  };

  // uvu's CommonJS build, loaded and wrapped now, before any `-r` module runs: `esm` (which
  // uvu 0.5 then requires through its own loader, bypassing the hooks above) finds it in
  // the require cache, already wrapped
  try {
    const main = require.resolve('uvu', { paths: [ROOT] });
    if (UVU_MAIN.test(main)) patchExports(require(main), main);
  } catch (e) { /* no uvu where the tests run: nothing to wrap */ }

  // ----- native ESM: redirect `import 'uvu'` to the shim (Node >= 20.6 / 18.19) -----
  if (typeof Module.register === 'function') {
    try {
      Module.register(pathToFileURL(path.join(__dirname, 'rg-uvu-esm.mjs')).href);
    } catch (e) {
      emit({event: 'file_error', file: null, message: 'repogym ESM hook not registered: ' + errText(e)});
    }
  }

  function finish(code) {
    if (finished) return;
    finished = true;
    if (active) { active.end(); active = null; }
    emit({event: 'finish', passed: totals.passed, failed: totals.failed,
      skipped: totals.skipped + totals.todo, errors: totals.file_errors, exit_code: code,
      exit_code_checked: false});
  }
  // uvu's exec() ends the process itself once every suite ran: the run is complete when each
  // queued suite reached its end; a process that ends before (a test calling process.exit, a
  // crash) leaves no finish line and is not believed
  process.on('exit', (code) => {
    if (execStarted && registered === ended) finish(code);
    else if (active) { active.end(); active = null; }
  });
}
