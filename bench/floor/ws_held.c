/* The floor for held WebSockets: the least a one-threaded libuv client pays to hold N sockets,
 * each sending a small text message every PACE_MS and reading its echo.
 *
 *   ws_held HOST PORT N PACE_MS DURATION_S RAMP_S FROM_S TO_S SOURCE_IP
 *
 * Opens N sockets to ws://HOST:PORT/ws from SOURCE_IP, spread evenly over the first RAMP_S
 * seconds, as `corral load`'s held model ramps its VUs. Each socket writes one fixed Upgrade
 * request and reads up to the blank line of the answer (a status other than 101 counts as a
 * failed opening); then it sends its message at once and every PACE_MS after, a timer per
 * socket. The message is one prebuilt masked text frame of the size corral's bench scenario
 * sends ({"vu":...,"text":"still here"}); the same mask key every time, where a real client
 * draws one per frame. Nothing else of the protocol is spoken, and no frame is parsed: the echo
 * of each message is a frame of known length (the server's frames are not masked), so the echoes
 * are counted from the bytes received. That is all a client must do to be on schedule.
 *
 * After DURATION_S it prints one line of JSON: sockets opened, failed to open and lost (ended
 * by the server), messages sent, echoes received in all, between FROM_S and TO_S (the steady
 * window) and in each second, its CPU from getrusage, peak RSS; and exits 0 without closing the
 * sockets.
 *
 * bench/held-connections --floor compiles it with `cc -O2 -o ws_held ws_held.c -luv` and runs
 * one per 16,000 sockets (the file-descriptor limit is 20,000 a process), each from its own
 * source address, against the same corral-target.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

static const char kPayload[] = "{\"vu\":\"12345\",\"text\":\"still here\"}";
#define PAYLOAD_LEN (sizeof kPayload - 1)
#define ECHO_LEN (2 + PAYLOAD_LEN) /* unmasked, a 7-bit length */

static char frame[2 + 4 + PAYLOAD_LEN];
static char upgrade[512];
static size_t upgrade_len;

struct sock {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_connect_t connect;
  uint64_t got;   /* echo bytes received */
  uint64_t due;   /* when its next message is due (ms of the loop's clock) */
  uint32_t match; /* how much of "\r\n\r\n" ends what was read of the answer */
  uint8_t open;
  uint8_t status_seen; /* the status line's code has been read */
};

static uv_loop_t* loop;
static struct sock* socks;
static int n_socks, next_open;
static uint64_t pace_ms, start_ms, ramp_ms, from_ms, to_ms, duration_ms;
static struct sockaddr_in target, source;
static uint64_t opened, failed, lost, sent, echoes, echoes_in_window;
#define MAX_SECONDS 3600
static uint64_t echoes_by_second[MAX_SECONDS]; /* by the second of the test they came in */
static char rbuf[65536];

static uint64_t since_start(void) { return uv_now(loop) - start_ms; }

static void alloc_cb(uv_handle_t* h, size_t n, uv_buf_t* b) {
  (void)h;
  (void)n;
  *b = uv_buf_init(rbuf, sizeof rbuf);
}

/* Each message is due PACE_MS after the last one was due, not after it was sent: the timer is
 * set from the schedule, so that it neither drifts later nor gathers the sockets of one turn of
 * the loop into one burst (as a repeating libuv timer, counted from the turn it fired in, does). */
static void send_message(uv_timer_t* t) {
  struct sock* s = t->data;
  uv_buf_t b = uv_buf_init(frame, sizeof frame);
  if (uv_try_write((uv_stream_t*)&s->tcp, &b, 1) == (int)sizeof frame) ++sent;
  s->due += pace_ms;
  uint64_t now = uv_now(loop);
  uv_timer_start(t, send_message, s->due > now ? s->due - now : 0, 0);
}

static void ended(struct sock* s, int was_open) {
  if (was_open) {
    ++lost;
    uv_timer_stop(&s->timer);
  } else {
    ++failed;
  }
  uv_read_stop((uv_stream_t*)&s->tcp);
  s->open = 0;
}

/* The answer's head: "HTTP/1.1 101" first, then bytes until "\r\n\r\n". Returns how many bytes
 * of `p` it took, or -1 for an answer that is not 101. */
static ssize_t read_head(struct sock* s, const char* p, size_t n) {
  if (!s->status_seen) {
    if (n < 12 || memcmp(p + 9, "101", 3) != 0) return -1; /* one read holds the status line */
    s->status_seen = 1;
  }
  static const char kEnd[] = "\r\n\r\n";
  for (size_t i = 0; i < n; ++i) {
    s->match = p[i] == kEnd[s->match] ? s->match + 1 : (p[i] == '\r' ? 1 : 0);
    if (s->match == 4) return (ssize_t)(i + 1);
  }
  return (ssize_t)n;
}

static void read_cb(uv_stream_t* st, ssize_t n, const uv_buf_t* b) {
  struct sock* s = st->data;
  if (n <= 0) {
    if (n < 0) ended(s, s->open);
    return;
  }
  size_t used = 0;
  if (!s->open) {
    ssize_t took = read_head(s, b->base, (size_t)n);
    if (took < 0) {
      ended(s, 0);
      return;
    }
    if (s->match < 4) return;
    used = (size_t)took;
    s->open = 1;
    ++opened;
    s->due = uv_now(loop);
    send_message(&s->timer);
  }
  uint64_t before = s->got / ECHO_LEN;
  s->got += (uint64_t)n - used;
  uint64_t now = s->got / ECHO_LEN - before;
  echoes += now;
  uint64_t t = since_start();
  if (t >= from_ms && t < to_ms) echoes_in_window += now;
  if (t / 1000 < MAX_SECONDS) echoes_by_second[t / 1000] += now;
}

static void connect_cb(uv_connect_t* c, int status) {
  struct sock* s = c->data;
  if (status != 0) {
    ++failed;
    return;
  }
  uv_tcp_nodelay(&s->tcp, 1);
  uv_buf_t b = uv_buf_init(upgrade, (unsigned)upgrade_len);
  if (uv_try_write((uv_stream_t*)&s->tcp, &b, 1) != (int)upgrade_len) {
    ++failed;
    return;
  }
  uv_read_start((uv_stream_t*)&s->tcp, alloc_cb, read_cb);
}

/* Bound to the source address with IP_BIND_ADDRESS_NO_PORT, as corral's held sockets are: the
 * port is chosen at connect, for the 4-tuple, rather than by bind among all the ports in use. */
static void open_one(struct sock* s) {
  uv_timer_init(loop, &s->timer);
  s->tcp.data = s->timer.data = s->connect.data = s;
  int one = 1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one) != 0 ||
      bind(fd, (const struct sockaddr*)&source, sizeof source) != 0) {
    if (fd >= 0) close(fd);
    ++failed;
    return;
  }
  uv_tcp_init(loop, &s->tcp);
  if (uv_tcp_open(&s->tcp, fd) != 0 ||
      uv_tcp_connect(&s->connect, &s->tcp, (const struct sockaddr*)&target, connect_cb) != 0) {
    ++failed;
  }
}

static void ramp(uv_timer_t* t) {
  uint64_t e = since_start();
  int due = e >= ramp_ms ? n_socks : (int)((uint64_t)n_socks * e / ramp_ms);
  while (next_open < due) open_one(&socks[next_open++]);
  if (next_open == n_socks) uv_timer_stop(t);
}

static void finish(uv_timer_t* t) {
  (void)t;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
  printf("{\"opened\": %llu, \"failed\": %llu, \"lost\": %llu, \"sent\": %llu, \"echoes\": %llu, "
         "\"echoes_in_window\": %llu, \"cpu_s\": %.3f, \"max_rss_kb\": %ld, \"echoes_per_s\": [",
         (unsigned long long)opened, (unsigned long long)failed, (unsigned long long)lost,
         (unsigned long long)sent, (unsigned long long)echoes,
         (unsigned long long)echoes_in_window, cpu, ru.ru_maxrss);
  for (uint64_t i = 0; i < duration_ms / 1000 && i < MAX_SECONDS; ++i)
    printf("%s%llu", i ? ", " : "", (unsigned long long)echoes_by_second[i]);
  printf("]}\n");
  fflush(stdout);
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc != 10) {
    fprintf(stderr, "usage: ws_held HOST PORT N PACE_MS DURATION_S RAMP_S FROM_S TO_S SOURCE_IP\n");
    return 2;
  }
  n_socks = atoi(argv[3]);
  pace_ms = strtoull(argv[4], NULL, 10);
  duration_ms = strtoull(argv[5], NULL, 10) * 1000;
  ramp_ms = strtoull(argv[6], NULL, 10) * 1000;
  from_ms = strtoull(argv[7], NULL, 10) * 1000;
  to_ms = strtoull(argv[8], NULL, 10) * 1000;
  if (n_socks <= 0 || pace_ms == 0 || ramp_ms == 0 || uv_ip4_addr(argv[1], atoi(argv[2]), &target) ||
      uv_ip4_addr(argv[9], 0, &source)) {
    fprintf(stderr, "ws_held: bad arguments\n");
    return 2;
  }
  upgrade_len = (size_t)snprintf(upgrade, sizeof upgrade,
                                 "GET /ws HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\n"
                                 "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
                                 argv[1], argv[2]);
  static const unsigned char kMask[4] = {0x37, 0xfa, 0x21, 0x3d};
  frame[0] = (char)0x81;
  frame[1] = (char)(0x80 | PAYLOAD_LEN);
  memcpy(frame + 2, kMask, 4);
  for (size_t i = 0; i < PAYLOAD_LEN; ++i) frame[6 + i] = (char)(kPayload[i] ^ kMask[i % 4]);
  socks = calloc((size_t)n_socks, sizeof *socks);
  if (socks == NULL) return 1;
  loop = uv_default_loop();
  start_ms = uv_now(loop);
  uv_timer_t ramp_timer, end_timer;
  uv_timer_init(loop, &ramp_timer);
  uv_timer_init(loop, &end_timer);
  uv_timer_start(&ramp_timer, ramp, 0, 5);
  uv_timer_start(&end_timer, finish, duration_ms, 0);
  return uv_run(loop, UV_RUN_DEFAULT);
}
