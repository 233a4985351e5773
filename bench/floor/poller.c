/* The floor for a polling scenario instance's HTTP client: the least a libuv + http-parser
 * client with corral's design pays per poll.
 *
 *   poller HOST PORT N FIRST_ID INTERVAL_MS DURATION_S MAX_CONNS [SPREAD_MS]
 *
 * N instances with ids FIRST_ID .. FIRST_ID+N-1, each a repeating libuv timer. Instance i first
 * fires i * SPREAD_MS / N ms after the start (the first firings spread evenly over
 * [0, SPREAD_MS)), then every INTERVAL_MS from its first firing, as a corral instance that
 * polls every interval from its submission on. SPREAD_MS = 0: every instance is due at once at
 * the start, and they keep firing in one burst per interval, as corral's instances, which all
 * start at the submission; SPREAD_MS = INTERVAL_MS: a steady N / INTERVAL per second (as
 * timers.c). Without SPREAD_MS (7 arguments, as before it existed) it is INTERVAL_MS. The shape
 * matters: on loopback a burst shares the kernel's wake-ups and costs less CPU per poll than the
 * same polls spread evenly. Each firing sends `GET /status/<id>` with the headers corral's lean
 * client writes for it (Host, Accept, Accept-Encoding: worker/http/h1_wire.cc), so the server
 * does the same work.
 *
 * The connection pool is the lean client's (worker/http/h1_client.h): idle keep-alive
 * connections in a LIFO stack, a due instance takes the most recently used one; without one
 * it waits in a FIFO queue, and connections are opened while fewer are connecting than wait
 * and fewer than MAX_CONNS are open. A connection that becomes ready (connected, or its
 * answer complete and kept alive) takes the queue's head, or goes idle. TCP_NODELAY on; the
 * request goes out with uv_try_write (uv_write for what is left); every connection reads into
 * one static 64 KiB buffer; http-parser parses the answer, of which only the status is kept.
 * A connection the server closes (idle or mid-answer) is dropped; a request that fails is
 * counted and not retried. An instance whose previous request is still out when its timer
 * fires skips that round (counted). HOST must be an IP address.
 *
 * After DURATION_S, or on SIGTERM / SIGINT, it prints one line of JSON (requests sent,
 * answers, failures, connections opened, its CPU from getrusage, peak RSS; "line": "end") and
 * exits 0. On SIGUSR1 it prints the same line with the counts so far ("line": "snapshot", with
 * "snapshot": 1, 2, ... counting them, and "unix_s": the wall-clock time) and goes on; the driver
 * takes one at each end of its measured window, for the connections opened within it.
 *
 * bench/http-client compiles it with `cc -O2 -o poller poller.c -luv -lhttp_parser` into its
 * temporary directory and runs one per worker corral would have, as its `floor` client.
 */
#define _DEFAULT_SOURCE /* uv.h needs the POSIX types, also under -std=c11 */
#include <http_parser.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <uv.h>

#define MAX_INSTANCES 1000000
#define MAX_CONNS_LIMIT 10000 /* the fd limit is 20,000 per process */
#define MAX_DURATION_S 86400.0
#define MAX_INTERVAL_MS 3600000ULL

typedef struct instance {
  uv_timer_t timer;
  uint32_t id;
  int busy;              /* its request is queued or on a connection */
  struct instance* next; /* in the FIFO queue */
} instance_t;

typedef struct conn {
  uv_tcp_t tcp;
  uv_connect_t connect;
  uv_write_t write;
  http_parser parser;
  instance_t* inst;                  /* the instance whose answer is awaited, or NULL */
  struct conn *idle_prev, *idle_next; /* in the idle stack */
  int connected, idle, closing, complete, keep_alive, status;
  char out[512];
} conn_t;

static struct {
  uv_loop_t* loop;
  struct sockaddr_storage addr;
  char host_header[300];
  uint64_t n, first_id, interval_ms, max_conns, spread_ms;
  double duration_s;
  instance_t* instances;
  instance_t *queue_head, *queue_tail; /* FIFO of due instances without a connection */
  uint64_t queued;
  conn_t* idle_top; /* LIFO of idle connections: the most recently used first */
  uint64_t open, connecting, peak_open;
  uint64_t requests, ok, other_status, failures, connect_failures, skipped;
  uint64_t opened, closed_by_server, idle_reads;
  double wall0;
  uint64_t snapshots;
  int finished;
} g;

static char read_buffer[64 * 1024]; /* shared by every connection: a read is parsed at once */

static http_parser_settings settings;

static void dispatch(void);
static void conn_ready(conn_t* c);

/* ------------------------------------------------------------------ idle stack, queue */

static void idle_push(conn_t* c) {
  c->idle = 1;
  c->idle_prev = NULL;
  c->idle_next = g.idle_top;
  if (g.idle_top) g.idle_top->idle_prev = c;
  g.idle_top = c;
}

static void idle_remove(conn_t* c) {
  if (!c->idle) return;
  if (c->idle_prev) c->idle_prev->idle_next = c->idle_next;
  else g.idle_top = c->idle_next;
  if (c->idle_next) c->idle_next->idle_prev = c->idle_prev;
  c->idle = 0;
  c->idle_prev = c->idle_next = NULL;
}

static conn_t* idle_pop(void) {
  conn_t* c = g.idle_top;
  if (c) idle_remove(c);
  return c;
}

static void queue_push(instance_t* in) {
  in->next = NULL;
  if (g.queue_tail) g.queue_tail->next = in;
  else g.queue_head = in;
  g.queue_tail = in;
  g.queued++;
}

static instance_t* queue_pop(void) {
  instance_t* in = g.queue_head;
  if (!in) return NULL;
  g.queue_head = in->next;
  if (!g.queue_head) g.queue_tail = NULL;
  in->next = NULL;
  g.queued--;
  return in;
}

/* ------------------------------------------------------------------ connections */

static void on_closed(uv_handle_t* h) { free(h->data); }

/* Drops a connection; its request, if any, has failed. */
static void conn_close(conn_t* c) {
  if (c->closing) return;
  c->closing = 1;
  if (c->inst) {
    c->inst->busy = 0;
    c->inst = NULL;
    g.failures++;
  }
  idle_remove(c);
  if (!c->connected) g.connecting--;
  g.open--;
  uv_close((uv_handle_t*)&c->tcp, on_closed);
  dispatch(); /* a place under MAX_CONNS is free again */
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf) {
  (void)h;
  (void)suggested;
  *buf = uv_buf_init(read_buffer, sizeof read_buffer);
}

static int on_status(http_parser* p, const char* at, size_t len) {
  (void)at;
  (void)len;
  ((conn_t*)p->data)->status = p->status_code;
  return 0;
}

static int on_message_complete(http_parser* p) {
  conn_t* c = (conn_t*)p->data;
  c->status = p->status_code;
  c->complete = 1;
  c->keep_alive = http_should_keep_alive(p);
  return 0;
}

/* The answer is complete: count it, free its instance, reuse or drop the connection. */
static void answer_complete(conn_t* c, int reusable) {
  instance_t* in = c->inst;
  c->inst = NULL;
  in->busy = 0;
  if (c->status >= 200 && c->status < 300) g.ok++;
  else g.other_status++;
  if (reusable && c->keep_alive) conn_ready(c);
  else conn_close(c);
}

static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  conn_t* c = (conn_t*)s->data;
  if (c->closing || n == 0) return;
  if (n < 0) {
    if (n == UV_EOF && c->inst && !c->complete) { /* a body ended by close */
      http_parser_execute(&c->parser, &settings, NULL, 0);
      if (c->complete) {
        answer_complete(c, 0);
        return;
      }
    }
    if (!c->inst) g.closed_by_server++; /* a keep-alive timeout */
    conn_close(c);
    return;
  }
  if (!c->inst) { /* bytes nobody asked for: the stream is out of step */
    g.idle_reads++;
    conn_close(c);
    return;
  }
  size_t used = http_parser_execute(&c->parser, &settings, buf->base, (size_t)n);
  if (c->complete) {
    answer_complete(c, used == (size_t)n);
    return;
  }
  if (HTTP_PARSER_ERRNO(&c->parser) != HPE_OK) conn_close(c);
}

static void on_write(uv_write_t* w, int status) {
  conn_t* c = (conn_t*)w->data;
  if (status < 0 && !c->closing) conn_close(c);
}

/* Sends `in`'s request on the ready, idle connection `c`. */
static void conn_begin(conn_t* c, instance_t* in) {
  c->inst = in;
  c->complete = c->keep_alive = 0;
  c->status = 0;
  http_parser_init(&c->parser, HTTP_RESPONSE);
  c->parser.data = c;
  int len = snprintf(c->out, sizeof c->out,
                     "GET /status/%" PRIu32 " HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\n"
                     "Accept-Encoding: gzip, deflate\r\n\r\n",
                     in->id, g.host_header);
  g.requests++;
  uv_buf_t buf = uv_buf_init(c->out, (unsigned)len);
  int wrote = uv_try_write((uv_stream_t*)&c->tcp, &buf, 1);
  if (wrote == len) return; /* the usual case: all sent */
  if (wrote < 0 && wrote != UV_EAGAIN) {
    conn_close(c);
    return;
  }
  int sent = wrote > 0 ? wrote : 0;
  buf = uv_buf_init(c->out + sent, (unsigned)(len - sent));
  c->write.data = c;
  if (uv_write(&c->write, (uv_stream_t*)&c->tcp, &buf, 1, on_write) != 0) conn_close(c);
}

/* A connection is ready for a request: the queue's head gets it, or it goes idle. */
static void conn_ready(conn_t* c) {
  instance_t* in = queue_pop();
  if (in) conn_begin(c, in);
  else idle_push(c);
}

static void on_connect(uv_connect_t* req, int status) {
  conn_t* c = (conn_t*)req->data;
  if (c->closing) return;
  if (status < 0) { /* the queue's head fails, as in the lean client */
    g.connect_failures++;
    instance_t* in = queue_pop();
    if (in) {
      in->busy = 0;
      g.failures++;
    }
    conn_close(c);
    return;
  }
  c->connected = 1;
  g.connecting--;
  uv_tcp_nodelay(&c->tcp, 1);
  uv_read_start((uv_stream_t*)&c->tcp, on_alloc, on_read);
  conn_ready(c);
}

/* Opens a connection; 0 when it could not even start (no socket: the queue's head fails). */
static int conn_open(void) {
  conn_t* c = calloc(1, sizeof *c);
  if (!c) {
    fprintf(stderr, "poller: out of memory\n");
    exit(1);
  }
  uv_tcp_init(g.loop, &c->tcp);
  c->tcp.data = c;
  c->connect.data = c;
  g.opened++;
  int rc = uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr*)&g.addr, on_connect);
  if (rc != 0) {
    g.connect_failures++;
    instance_t* in = queue_pop();
    if (in) {
      in->busy = 0;
      g.failures++;
    }
    c->closing = 1;
    uv_close((uv_handle_t*)&c->tcp, on_closed);
    return 0;
  }
  g.open++;
  g.connecting++;
  if (g.open > g.peak_open) g.peak_open = g.open;
  return 1;
}

/* Opens connections for the queue, within MAX_CONNS; not again after a failure to start one
 * (the next due instance tries again). */
static void dispatch(void) {
  if (g.finished) return;
  while (g.connecting < g.queued && g.open < g.max_conns) {
    if (!conn_open()) return;
  }
}

/* ------------------------------------------------------------------ instances */

static void on_due(uv_timer_t* t) {
  instance_t* in = (instance_t*)t->data;
  if (in->busy) { /* the previous request is still out */
    g.skipped++;
    return;
  }
  in->busy = 1;
  conn_t* c = idle_pop();
  if (c) {
    conn_begin(c, in);
    return;
  }
  queue_push(in);
  dispatch();
}

/* ------------------------------------------------------------------ the end */

static double wall_seconds(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec + tv.tv_usec / 1e6;
}

/* The peak RSS of this program: VmHWM, which exec resets (getrusage's ru_maxrss keeps the peak of
 * the process before exec, e.g. a Python driver's); ru_maxrss when /proc cannot be read. */
static long max_rss_bytes(const struct rusage* ru) {
  char line[256];
  long kb = -1;
  FILE* f = fopen("/proc/self/status", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    }
    fclose(f);
  }
  return (kb >= 0 ? kb : ru->ru_maxrss) * 1024L;
}

/* One line of JSON with the counts so far: `why` ended the run, or (NULL) a snapshot. */
static void print_counts(const char* why) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double now = wall_seconds();
  char head[160];
  if (why) snprintf(head, sizeof head, "\"line\": \"end\", \"ended_by\": \"%s\"", why);
  else snprintf(head, sizeof head, "\"line\": \"snapshot\", \"snapshot\": %" PRIu64, ++g.snapshots);
  printf("{%s, \"unix_s\": %.3f, \"instances\": %" PRIu64 ", \"first_id\": %" PRIu64
         ", \"interval_ms\": %" PRIu64 ", \"spread_ms\": %" PRIu64 ", \"max_conns\": %" PRIu64
         ", \"wall_s\": %.3f, "
         "\"requests\": %" PRIu64 ", \"responses_ok\": %" PRIu64 ", \"responses_other\": %" PRIu64
         ", \"failures\": %" PRIu64 ", \"connect_failures\": %" PRIu64 ", \"skipped_busy\": %" PRIu64
         ", \"connections_opened\": %" PRIu64 ", \"closed_idle_by_server\": %" PRIu64
         ", \"connections_open\": %" PRIu64 ", \"connections_peak\": %" PRIu64 ", \"queued\": %" PRIu64
         ", \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, \"max_rss_bytes\": %ld}\n",
         head, now, g.n, g.first_id, g.interval_ms, g.spread_ms, g.max_conns, now - g.wall0, g.requests, g.ok,
         g.other_status, g.failures, g.connect_failures, g.skipped, g.opened, g.closed_by_server,
         g.open, g.peak_open, g.queued, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
         ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, max_rss_bytes(&ru));
  fflush(stdout);
}

static void finish(const char* why) {
  if (g.finished) return;
  g.finished = 1;
  print_counts(why);
  uv_stop(g.loop);
}

static void on_duration(uv_timer_t* t) {
  (void)t;
  finish("duration");
}

static void on_signal(uv_signal_t* s, int signum) {
  (void)s;
  if (signum == SIGUSR1) {
    if (!g.finished) print_counts(NULL);
    return;
  }
  finish(signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* ------------------------------------------------------------------ arguments */

static int parse_u64(const char* s, uint64_t lo, uint64_t hi, uint64_t* out) {
  char* end;
  if (!*s || *s == '-') return 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

static int usage(const char* why) {
  fprintf(stderr,
          "poller: %s\nusage: poller HOST PORT N FIRST_ID INTERVAL_MS DURATION_S MAX_CONNS [SPREAD_MS]\n"
          "  HOST an IP address; 1 <= N <= %d; FIRST_ID+N-1 < 2^32; 1 <= INTERVAL_MS <= %llu;\n"
          "  0 < DURATION_S <= %.0f; 1 <= MAX_CONNS <= %d; 0 <= SPREAD_MS <= %llu (default\n"
          "  INTERVAL_MS; 0: every instance due at once at the start)\n",
          why, MAX_INSTANCES, MAX_INTERVAL_MS, MAX_DURATION_S, MAX_CONNS_LIMIT, MAX_INTERVAL_MS);
  return 2;
}

int main(int argc, char** argv) {
  if (argc != 8 && argc != 9) return usage("7 or 8 arguments expected");
  const char* host = argv[1];
  uint64_t port;
  char* end;
  if (!parse_u64(argv[2], 1, 65535, &port)) return usage("bad PORT");
  if (!parse_u64(argv[3], 1, MAX_INSTANCES, &g.n)) return usage("bad N");
  if (!parse_u64(argv[4], 0, UINT32_MAX, &g.first_id) || g.first_id + g.n - 1 > UINT32_MAX)
    return usage("bad FIRST_ID");
  if (!parse_u64(argv[5], 1, MAX_INTERVAL_MS, &g.interval_ms)) return usage("bad INTERVAL_MS");
  g.duration_s = strtod(argv[6], &end);
  if (*end || !(g.duration_s > 0 && g.duration_s <= MAX_DURATION_S)) return usage("bad DURATION_S");
  if (!parse_u64(argv[7], 1, MAX_CONNS_LIMIT, &g.max_conns)) return usage("bad MAX_CONNS");
  g.spread_ms = g.interval_ms; /* 7 arguments: spread over one interval, as before SPREAD_MS */
  if (argc == 9 && !parse_u64(argv[8], 0, MAX_INTERVAL_MS, &g.spread_ms)) return usage("bad SPREAD_MS");
  if (strlen(host) > 255) return usage("HOST too long");
  if (uv_ip4_addr(host, (int)port, (struct sockaddr_in*)&g.addr) != 0 &&
      uv_ip6_addr(host, (int)port, (struct sockaddr_in6*)&g.addr) != 0)
    return usage("HOST is not an IP address");
  const char* fmt = strchr(host, ':') ? "[%s]" : "%s"; /* an IPv6 literal goes in brackets */
  int hl = snprintf(g.host_header, sizeof g.host_header, fmt, host);
  if (port != 80) snprintf(g.host_header + hl, sizeof g.host_header - hl, ":%" PRIu64, port);

  signal(SIGPIPE, SIG_IGN); /* as corral's worker: a write to a closed socket is an error */
  settings.on_status = on_status;
  settings.on_message_complete = on_message_complete;
  g.loop = uv_default_loop();
  g.instances = calloc(g.n, sizeof *g.instances);
  if (!g.instances) {
    fprintf(stderr, "poller: out of memory for %" PRIu64 " instances\n", g.n);
    return 1;
  }
  uv_update_time(g.loop);
  for (uint64_t i = 0; i < g.n; ++i) {
    instance_t* in = &g.instances[i];
    in->id = (uint32_t)(g.first_id + i);
    uv_timer_init(g.loop, &in->timer);
    in->timer.data = in;
    /* first firing at i * SPREAD_MS / N (0: all at once), then every interval from it; timers due
     * in the same loop iteration fire together and are rescheduled from the same loop time, so a
     * burst stays one burst */
    uv_timer_start(&in->timer, on_due, (i * g.spread_ms) / g.n, g.interval_ms);
  }
  uv_timer_t stop;
  uv_timer_init(g.loop, &stop);
  uv_timer_start(&stop, on_duration, (uint64_t)(g.duration_s * 1000), 0);
  uv_signal_t sigterm, sigint, sigusr1;
  uv_signal_init(g.loop, &sigterm);
  uv_signal_start(&sigterm, on_signal, SIGTERM);
  uv_signal_init(g.loop, &sigint);
  uv_signal_start(&sigint, on_signal, SIGINT);
  uv_signal_init(g.loop, &sigusr1);
  uv_signal_start(&sigusr1, on_signal, SIGUSR1);
  g.wall0 = wall_seconds();
  uv_run(g.loop, UV_RUN_DEFAULT);
  return 0; /* the connections and timers go with the process */
}
