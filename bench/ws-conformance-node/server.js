// The peer of bench/ws-conformance: Node's ws server (pinned in package.json), one route per
// case. The routes that speak WebSocket correctly are ws's own (fragments, pings, closes,
// compression); the ones that break it write their bytes on ws's socket, or answer the Upgrade
// by hand. Prints "listening on PORT" once it listens on 127.0.0.1.
'use strict';
const crypto = require('crypto');
const http = require('http');
const { WebSocketServer } = require('ws');

const plain = new WebSocketServer({ noServer: true, perMessageDeflate: false });
const deflating = new WebSocketServer({ noServer: true, perMessageDeflate: { threshold: 0 } });

// Every route answers the client's first message, then does what its name says.
const routes = {
  '/echo': (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })),
  '/fragments': (ws) => ws.once('message', () => {
    ws.send('ab', { fin: false });
    ws.send('cd', { fin: false });
    ws.send('e', { fin: true });
  }),
  '/fragments-ping': (ws) => {
    ws.on('pong', () => ws.send('pong seen'));
    ws.once('message', () => {
      ws.send('ab', { fin: false });
      ws.ping();
      ws.send('cd', { fin: false });
      ws.send('e', { fin: true });
    });
  },
  '/close-code': (ws) => ws.once('message', () => ws.close(4001, 'bye')),
  '/close-bare': (ws) => ws.once('message', () => ws.close()),
  '/close-invalid': (ws) => ws.once('message', () => ws._socket.write(Buffer.from('880203e7', 'hex'))),
  '/oversized': (ws) => ws.once('message', () => ws.send('x'.repeat(2000))),
  '/bad-utf8': (ws) => ws.once('message', () => ws._socket.write(Buffer.from('8102fffe', 'hex'))),
};

// Upgrades ws does not make: a 200, a wrong accept, and no answer at all.
function broken(path, req, socket) {
  if (path === '/status-200') {
    socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno');
  } else if (path === '/bad-accept') {
    const wrong = crypto.createHash('sha1').update('not the key').digest('base64');
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n' +
                 `Connection: Upgrade\r\nSec-WebSocket-Accept: ${wrong}\r\n\r\n`);
  } else if (path !== '/silent') {
    return false;
  }
  return true;  // /silent: the socket stays open, unanswered
}

const server = http.createServer((req, res) => { res.writeHead(426); res.end(); });
server.on('upgrade', (req, socket, head) => {
  const url = new URL(req.url, 'http://x');
  socket.on('error', () => {});
  if (broken(url.pathname, req, socket)) return;
  const route = routes[url.pathname];
  if (!route) { socket.destroy(); return; }
  const wss = url.searchParams.get('deflate') === '1' ? deflating : plain;
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.on('error', () => {});
    route(ws);
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening on 127.0.0.1:${server.address().port}`));
