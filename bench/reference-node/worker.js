'use strict';
// Piscina task: one whole scenario. With Piscina's defaults a thread runs one task at a
// time (concurrentTasksPerWorker 1), so a 20-minute scenario holds its thread that long.
const { Agent } = require('undici');
const { runScenario } = require('./scenario');

const dispatcher = new Agent({ keepAliveTimeout: 30000, connections: 16 });

module.exports = async function task({ id, base, intervalMs, maxPolls, counters }) {
  return runScenario({ id, base, intervalMs, maxPolls }, dispatcher, new Int32Array(counters));
};
