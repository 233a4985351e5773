'use strict';
// A plain Node.js `http` server with Node's default settings, for bench/http-client: the
// target of the "CPU per poll" measurement next to corral-target and nginx. Nothing is tuned:
// server.keepAliveTimeout stays at Node's default (5 s), so a client that polls every 5 s
// meets connections the server closes while idle, as it would against most Node services.
//
//   node bench/http-client-node-target.js [--port 0]
//   prints "listening on 127.0.0.1:PORT" once it accepts connections.
//
// GET /__count  {"requests", "connections", "open", "keep_alive_timeout_ms"}: requests answered
//               and connections accepted since the start (this route is not counted), and
//               connections open now
// anything else 200 {"status":"N"} (Content-Type: application/json), counted in "requests"
const http = require('node:http');

function flag(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

const BODY = Buffer.from('{"status":"N"}');
const HEADERS = { 'Content-Type': 'application/json', 'Content-Length': BODY.length };
let requests = 0;
let connections = 0;
let open = 0;

const server = http.createServer((req, res) => {
  if (req.url === '/__count') {
    const out = Buffer.from(JSON.stringify({
      requests, connections, open, keep_alive_timeout_ms: server.keepAliveTimeout,
    }));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': out.length });
    res.end(out);
    return;
  }
  requests++;
  res.writeHead(200, HEADERS);
  res.end(BODY);
});

server.on('connection', (socket) => {
  connections++;
  open++;
  socket.on('close', () => { open--; });
});

server.listen(Number(flag('port', '0')), '127.0.0.1', () => {
  process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => process.exit(0));
}
