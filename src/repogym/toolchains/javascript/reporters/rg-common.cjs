// repogym: what every runner's reporter shares. Loaded before any test code runs; it reads
// the run's settings from the file REPOGYM_JS_CONFIG names, then removes that file and the
// variable, so code under test finds neither the nonce nor the report's path there. Every
// function it uses to write and hash is bound here, at load.
//
// The nonce never appears in the report: the last line ("finish") carries an HMAC, keyed
// with the nonce, of every byte written before it. Code that reads the report learns nothing
// it could sign with; lines it adds or rewrites break the HMAC.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const writeSync = fs.writeSync;
const openSync = fs.openSync;
const stringify = JSON.stringify;
const now = Date.now;
const createHash = crypto.createHash;
const createHmac = crypto.createHmac;
const running = createHash('sha256');

let config = null;
let fd = null;

function load() {
  if (config !== null) return config;
  const where = process.env.REPOGYM_JS_CONFIG;
  delete process.env.REPOGYM_JS_CONFIG;
  config = { report: '', nonce: '', root: process.cwd() };
  if (where) {
    try {
      config = Object.assign(config, JSON.parse(fs.readFileSync(where, 'utf8')));
      fs.unlinkSync(where);
    } catch (err) {
      // no settings: every line goes nowhere, and the run is read as incomplete
    }
  }
  if (config.report) fd = openSync(config.report, 'a');
  return config;
}

let finished = false;

function emit(event, fields) {
  load();
  if (fd === null || finished) return;
  let record = Object.assign({ event: event }, fields || {});
  if (event === 'finish') {
    finished = true;
    const digest = running.digest('hex');
    record.mac = createHmac('sha256', String(config.nonce)).update(digest).digest('hex');
  }
  const line = Buffer.from(stringify(record) + '\n', 'utf8');
  if (!finished) running.update(line);
  writeSync(fd, line);
}

function relFile(file) {
  load();
  if (!file) return '';
  let name = String(file);
  if (name.startsWith('file://')) name = decodeURIComponent(name.slice(7));
  const rel = path.relative(config.root, name);
  return (rel && !rel.startsWith('..') ? rel : name).split(path.sep).join('/');
}

function message(err) {
  if (err === undefined || err === null) return '';
  if (Array.isArray(err)) return err.map(message).filter(Boolean).join('\n');
  if (typeof err === 'string') return err.slice(0, 4000);
  const text = err.stack || err.message || String(err);
  return String(text).slice(0, 4000);
}

function seconds(ms) {
  return typeof ms === 'number' && isFinite(ms) ? Math.max(0, ms) / 1000 : 0;
}

module.exports = { load, emit, relFile, message, seconds, now };
