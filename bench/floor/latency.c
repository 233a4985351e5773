/* The floor for an API probe: the least time any one-threaded server on this machine takes to
 * answer a GET, under whatever else runs beside it.
 *
 *   latency [PORT]
 *
 * Listens on 127.0.0.1:PORT (0 or none: a free port), prints the port on a line of its own,
 * and answers every request on every connection with the answer corral's GET /latency gives
 * (200, {"ok":true}, kept alive): epoll, non-blocking sockets, no allocation per request. It
 * reads a request up to its blank line and ignores a body (probes have none). Runs until
 * SIGTERM or SIGINT.
 *
 * bench/master-stalls --floor runs it beside the master and probes both the same way: what the
 * floor cannot do under the same load (two workers and corral-target on two cores), the
 * master cannot either.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const char kAnswer[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* What one connection has read of a request not yet complete: the last 3 bytes are enough to
 * find a "\r\n\r\n" that spans two reads. */
struct conn {
  int fd;
  char tail[3];
  int tail_len;
};

/* Answers every complete request in what was read; 0 when the connection is to be closed. */
static int serve(struct conn *c) {
  char buf[16384];
  for (;;) {
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    char scan[sizeof buf + 3];
    memcpy(scan, c->tail, (size_t)c->tail_len);
    memcpy(scan + c->tail_len, buf, (size_t)n);
    size_t len = (size_t)c->tail_len + (size_t)n, from = 0;
    for (size_t i = 0; i + 3 < len; ++i) {
      if (memcmp(scan + i, "\r\n\r\n", 4) != 0) continue;
      if (write(c->fd, kAnswer, sizeof kAnswer - 1) != (ssize_t)(sizeof kAnswer - 1)) return 0;
      from = i + 4;
      i += 3;
    }
    size_t rest = len - from < 3 ? len - from : 3;
    memcpy(c->tail, scan + len - rest, rest);
    c->tail_len = (int)rest;
  }
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 0;
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 128) != 0 ||
      getsockname(lfd, (struct sockaddr *)&a, &alen) != 0) {
    perror("latency: listen");
    return 1;
  }
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  struct epoll_event got[64];
  while (!stop) {
    int n = epoll_wait(ep, got, 64, 200);
    for (int i = 0; i < n; ++i) {
      struct conn *c = got[i].data.ptr;
      if (c == NULL) {
        int fd;
        while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct conn *nc = calloc(1, sizeof *nc);
          nc->fd = fd;
          struct epoll_event cev = {.events = EPOLLIN, .data.ptr = nc};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
        }
      } else if (!serve(c)) {
        close(c->fd);
        free(c);
      }
    }
  }
  return 0;
}
