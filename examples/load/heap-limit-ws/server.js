// A small Node.js WebSocket server (the `ws` package) that keeps state per socket and never
// lets it go while the socket is open: every message a client sends is kept, with a 4 KB
// record, in the socket's history, and answered with how many the socket has kept. Run with a
// small heap, it reaches V8's heap limit as held sockets ramp up, and dies with "JavaScript
// heap out of memory":
//
//   node --max-old-space-size=128 examples/load/heap-limit-ws/server.js 18788
//
// ws://127.0.0.1:PORT/ws  each message {"vu": ...} -> {"vu": ..., "kept": <messages kept>}
// GET /metrics            -> {"heapUsed", "heapTotal", "rss", "sockets", "messages"} (JSON
//                            numbers, for `corral load --watch-url`)
// It prints "listening on 127.0.0.1:PORT" once it accepts (port 0 picks a free one), and every
// second its own count of open sockets to stderr: "sockets 1234 messages 56789 heap 97.1 MB".
// Install its one package first: examples/load/heap-limit-ws/setup.
'use strict';
const http = require('http');
const path = require('path');
const {WebSocketServer} = require(path.join(__dirname, 'node_modules', 'ws'));

const port = Number(process.argv[2] || 18788);
let sockets = 0;
let messages = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/metrics') {
    const m = process.memoryUsage();
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(
        {heapUsed: m.heapUsed, heapTotal: m.heapTotal, rss: m.rss, sockets, messages}));
    return;
  }
  res.statusCode = 404;
  res.end();
});

const wss = new WebSocketServer({server, path: '/ws', perMessageDeflate: false});
wss.on('connection', (ws) => {
  sockets += 1;
  const history = [];
  ws.on('message', (data) => {
    let vu = null;
    try {
      vu = JSON.parse(data).vu;
    } catch (e) { /* not JSON: answered without a vu */
    }
    // 4 KB of heap per message (512 small integers), kept while the socket is open.
    history.push({at: Date.now(), data: String(data), record: new Array(512).fill(messages)});
    messages += 1;
    ws.send(JSON.stringify({vu, kept: history.length}));
  });
  ws.on('close', () => {
    sockets -= 1;
  });
});

setInterval(() => {
  const heap = process.memoryUsage().heapUsed / (1024 * 1024);
  process.stderr.write(`sockets ${sockets} messages ${messages} heap ${heap.toFixed(1)} MB\n`);
}, 1000);

server.listen(port, '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
