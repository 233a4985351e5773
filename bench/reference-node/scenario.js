'use strict';
// One polling scenario as the Node.js approach writes it: await a fetch of the status URL
// (keep-alive agent, body read and parsed), stop if the job says it is done, else await a
// timer of the interval; at most maxPolls polls. Shared by the event-loop mode (server.js)
// and the Piscina worker (worker.js).
const { fetch } = require('undici');
const { setTimeout: sleep } = require('node:timers/promises');

// Slots of the Int32Array over the SharedArrayBuffer that server.js reads for GET /stats.
const STARTED = 0;
const FINISHED = 1;
const POLLS = 2;
const ERRORS = 3;
const SLOTS = 4;

let lastError = '';

async function runScenario({ id, base, intervalMs, maxPolls }, dispatcher, counters) {
  Atomics.add(counters, STARTED, 1);
  try {
    for (let attempt = 1; attempt <= maxPolls; attempt++) {
      const res = await fetch(`${base}/status/${id}`, { dispatcher });
      const body = await res.json();
      Atomics.add(counters, POLLS, 1);
      if (body.status === 'Y') return 'passed';  // corral-target answers "N": never done
      if (attempt < maxPolls) await sleep(intervalMs);
    }
    return 'failed';
  } catch (err) {
    Atomics.add(counters, ERRORS, 1);
    lastError = String((err && err.cause) || err);
    return 'errored';
  } finally {
    Atomics.add(counters, FINISHED, 1);
  }
}

module.exports = {
  runScenario, STARTED, FINISHED, POLLS, ERRORS, SLOTS,
  lastError: () => lastError,
};
