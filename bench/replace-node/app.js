// The app bench/replace runs under pm2 in cluster mode: as soon as it runs, it tells the bench
// over UDP ("ready <pid>"), the moment a corral worker would say it is ready; then it idles.
const dgram = require("dgram");
const port = Number(process.env.BENCH_READY_PORT);
const sock = dgram.createSocket("udp4");
sock.send(`ready ${process.pid}`, port, "127.0.0.1");
setInterval(() => {}, 1 << 30);
