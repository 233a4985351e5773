/* The floor for an idle TLS connection's client memory with the system's OpenSSL (issue "TLS
 * and HTTP/2 on corral's own client", target: 8 KB a connection).
 *
 *   tls_memory CERT KEY [N]
 *
 * Makes N client connections to an in-memory server with the certificate CERT and key KEY (an
 * ECDSA or RSA pair; the client verifies nothing, which only saves it work), each through a
 * full TLS 1.3 handshake, then one request and one answer each way, and measures the client's
 * heap (mallinfo2, bytes in use) at three points, per connection:
 *   ssl_new     after SSL_new alone: the SSL object, before any byte
 *   idle        after the exchange, with SSL_MODE_RELEASE_BUFFERS and SSL_free_buffers(), and
 *               the memory BIOs replaced by a null BIO (corral's BIO holds no buffer): what an
 *               idle connection keeps inside OpenSSL
 *   idle_12     the same over TLS 1.2
 * and prints one line of JSON. The server's memory is not counted (it is freed first).
 *
 * Build: cc -O2 tls_memory.c -lssl -lcrypto
 */
#include <malloc.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>

static size_t heap(void) { return mallinfo2().uordblks; }

static void pump(BIO *from, BIO *to) {
  char buf[16384];
  int n;
  while ((n = BIO_read(from, buf, sizeof buf)) > 0) BIO_write(to, buf, n);
}

/* Bytes of client heap per idle connection, after a handshake and an exchange. */
static double idle_per_conn(SSL_CTX *cc, SSL_CTX *sc, int n) {
  SSL **clients = calloc((size_t)n, sizeof *clients);
  size_t before = heap();
  for (int i = 0; i < n; ++i) {
    SSL *c = SSL_new(cc), *s = SSL_new(sc);
    BIO *ci = BIO_new(BIO_s_mem()), *co = BIO_new(BIO_s_mem());
    BIO *si = BIO_new(BIO_s_mem()), *so = BIO_new(BIO_s_mem());
    SSL_set_bio(c, ci, co);
    SSL_set_bio(s, si, so);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    for (int round = 0; round < 8 && !(SSL_is_init_finished(c) && SSL_is_init_finished(s)); ++round) {
      SSL_do_handshake(c);
      pump(co, si);
      SSL_do_handshake(s);
      pump(so, ci);
    }
    char buf[64];
    SSL_write(c, "GET / HTTP/1.1\r\n\r\n", 18);
    pump(co, si);
    SSL_read(s, buf, sizeof buf);
    SSL_write(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 40);
    pump(so, ci);
    while (SSL_read(c, buf, sizeof buf) > 0) {
    }
    SSL_free(s);
    BIO *null = BIO_new(BIO_s_null());
    BIO_up_ref(null);
    SSL_set_bio(c, null, null); /* frees the memory BIOs and what they hold */
    SSL_free_buffers(c);
    clients[i] = c;
  }
  double per = (double)(heap() - before) / n;
  for (int i = 0; i < n; ++i) SSL_free(clients[i]);
  free(clients);
  return per;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: tls_memory CERT KEY [N]\n");
    return 2;
  }
  int n = argc > 3 ? atoi(argv[3]) : 2000;
  SSL_CTX *sc = SSL_CTX_new(TLS_server_method());
  if (SSL_CTX_use_certificate_chain_file(sc, argv[1]) != 1 ||
      SSL_CTX_use_PrivateKey_file(sc, argv[2], SSL_FILETYPE_PEM) != 1) {
    fprintf(stderr, "cannot load %s / %s\n", argv[1], argv[2]);
    return 2;
  }
  SSL_CTX *cc = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_mode(cc, SSL_MODE_RELEASE_BUFFERS);

  SSL **bare = calloc((size_t)n, sizeof *bare);
  size_t before = heap();
  for (int i = 0; i < n; ++i) bare[i] = SSL_new(cc);
  double ssl_new = (double)(heap() - before) / n;
  for (int i = 0; i < n; ++i) SSL_free(bare[i]);
  free(bare);

  double idle13 = idle_per_conn(cc, sc, n);
  SSL_CTX_set_max_proto_version(sc, TLS1_2_VERSION);
  double idle12 = idle_per_conn(cc, sc, n);
  printf("{\"openssl\": \"%s\", \"connections\": %d, \"ssl_new_bytes\": %.0f, "
         "\"idle_tls13_bytes\": %.0f, \"idle_tls12_bytes\": %.0f}\n",
         OpenSSL_version(OPENSSL_VERSION), n, ssl_new, idle13, idle12);
  return 0;
}
