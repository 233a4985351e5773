// A small Node.js server that keeps state per connection and never lets it go while the
// connection is open: every message a client sends is kept, with a 4 KB record, in the
// connection's history. Run with a small heap, it reaches V8's heap limit as held connections
// ramp up, and dies with "JavaScript heap out of memory":
//
//   node --max-old-space-size=128 examples/load/heap-limit/server.js 18787
//
// POST /message  {"vu": ..., "text": ...}  -> 200 {"kept": <messages kept on this connection>}
// GET  /metrics  -> {"heapUsed", "heapTotal", "rss", "connections", "messages"} (JSON numbers,
//                   for `corral load --watch-url`)
// Plain node, no packages. It prints "listening on 127.0.0.1:PORT" once it accepts (port 0
// picks a free one).
'use strict';
const http = require('http');

const port = Number(process.argv[2] || 18787);
let connections = 0;
let messages = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/metrics') {
    const m = process.memoryUsage();
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({heapUsed: m.heapUsed, heapTotal: m.heapTotal, rss: m.rss,
                            connections, messages}));
    return;
  }
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => {
    const history = req.socket.history || (req.socket.history = []);
    // 4 KB of heap per message (512 small integers), kept while the connection is open.
    history.push({at: Date.now(), body, record: new Array(512).fill(messages)});
    messages += 1;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({kept: history.length}));
  });
});
server.keepAliveTimeout = 120000;
server.headersTimeout = 125000;
server.maxConnections = 100000;
server.on('connection', (socket) => {
  connections += 1;
  socket.on('close', () => { connections -= 1; });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
