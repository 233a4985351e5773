'use strict';
// The approach corral replaces, for bench/seed-polling: an Express server that starts every
// test scenario as a chain of `await fetch` / `await timer` polls on Node's one event loop
// (mode=timer), or hands each scenario to a Piscina worker-thread pool with its default
// options (mode=piscina).
//
//   node server.js [--port 0] [--connections 512]
//   prints "listening on 127.0.0.1:PORT" once it accepts connections.
//
// GET  /latency   a tiny JSON answer straight from the event loop (the probe to watch)
// POST /trigger?n=N&url=BASE&interval_ms=5000&max_polls=240&mode=timer|piscina
//                 starts N scenarios, ids 0..N-1, each polling BASE/status/<id>
// GET  /stats     started, finished, running (= started - finished), polls, errors, queued
const path = require('node:path');
const express = require('express');
const { Agent } = require('undici');
const S = require('./scenario');

function flag(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const port = Number(flag('port', '0'));
// undici's default is no limit on connections per origin; 100,000 loops would then try to
// open 100,000 sockets against a 20,000 file-descriptor limit. A server written for this job
// caps its pool; corral's workers allow 512 requests in flight each.
const connections = Number(flag('connections', '512'));

const counters = new Int32Array(new SharedArrayBuffer(S.SLOTS * 4));
const dispatcher = new Agent({ keepAliveTimeout: 30000, connections });
let pool = null;  // created on the first mode=piscina trigger, with default options
let mode = 'idle';

const app = express();

app.get('/latency', (req, res) => {
  res.json({ ok: true });
});

app.get('/stats', (req, res) => {
  const started = Atomics.load(counters, S.STARTED);
  const finished = Atomics.load(counters, S.FINISHED);
  res.json({
    mode, started, finished, running: started - finished,
    polls: Atomics.load(counters, S.POLLS), errors: Atomics.load(counters, S.ERRORS),
    queued: pool ? pool.queueSize : 0, threads: pool ? pool.threads.length : 0,
    last_error: S.lastError(),
  });
});

app.post('/trigger', (req, res) => {
  const n = Number(req.query.n || 0);
  const base = String(req.query.url || '');
  const intervalMs = Number(req.query.interval_ms || 5000);
  const maxPolls = Number(req.query.max_polls || 240);
  const m = String(req.query.mode || 'timer');
  if (!(n > 0) || !base.startsWith('http://') || !(intervalMs > 0) || !(maxPolls > 0) ||
      (m !== 'timer' && m !== 'piscina')) {
    res.status(400).json({ error: 'need n>0, url=http://..., interval_ms>0, max_polls>0, mode=timer|piscina' });
    return;
  }
  mode = m;
  if (m === 'timer') {
    for (let id = 0; id < n; id++) {
      S.runScenario({ id, base, intervalMs, maxPolls }, dispatcher, counters);
    }
  } else {
    if (!pool) {
      const { Piscina } = require('piscina');
      pool = new Piscina({ filename: path.join(__dirname, 'worker.js') });
    }
    for (let id = 0; id < n; id++) {
      pool.run({ id, base, intervalMs, maxPolls, counters: counters.buffer }).catch((err) => {
        Atomics.add(counters, S.ERRORS, 1);
      });
    }
  }
  res.status(202).json({ triggered: n, mode: m });
});

const server = app.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => process.exit(0));
}
