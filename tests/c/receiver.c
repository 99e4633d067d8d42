#define _POSIX_C_SOURCE 200809L
#include "receiver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct conn {
    receiver *rx;
    int fd;
    pthread_t thread;
    struct conn *next;
} conn;

struct receiver {
    int listen_fd;
    int port;
    pthread_t accept_thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int stopping;
    int status;
    int delay_ms;
    rx_request **requests;
    size_t count, cap;
    conn *conns;
};

void sleep_ms(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int stopping(receiver *rx) {
    pthread_mutex_lock(&rx->lock);
    int s = rx->stopping;
    pthread_mutex_unlock(&rx->lock);
    return s;
}

/* A growable buffer of what a connection has read and not consumed yet. */
typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static int buf_fill(int fd, buf_t *b) {
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap ? b->cap * 2 : 8192;
        char *p = realloc(b->data, cap + 1);
        if (!p) return -1;
        b->data = p;
        b->cap = cap;
    }
    ssize_t n = recv(fd, b->data + b->len, b->cap - b->len, 0);
    if (n <= 0) return -1;
    b->len += (size_t)n;
    b->data[b->len] = '\0';
    return 0;
}

static void buf_consume(buf_t *b, size_t n) {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

static char *find_crlfcrlf(buf_t *b) {
    if (b->len < 4) return NULL;
    for (size_t i = 0; i + 3 < b->len; i++)
        if (memcmp(b->data + i, "\r\n\r\n", 4) == 0) return b->data + i;
    return NULL;
}

static int header_value(const char *headers, const char *name, char *out, size_t len) {
    size_t nlen = strlen(name);
    const char *line = headers;
    while (line && *line) {
        const char *end = strstr(line, "\r\n");
        if (!end) end = line + strlen(line);
        if ((size_t)(end - line) > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ' || *v == '\t') v++;
            size_t vlen = (size_t)(end - v);
            if (vlen >= len) vlen = len - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return 1;
        }
        line = *end ? end + 2 : end;
    }
    return 0;
}

int rx_header(const rx_request *req, const char *name, char *buf, size_t len) {
    return header_value(req->headers, name, buf, len);
}

/* Reads `n` body bytes (after what is buffered) into a fresh allocation. */
static int read_exact(int fd, buf_t *b, size_t n) {
    while (b->len < n)
        if (buf_fill(fd, b) != 0) return -1;
    return 0;
}

static int read_chunked(int fd, buf_t *b, char **body, size_t *body_len) {
    size_t len = 0, cap = 1024;
    char *out = malloc(cap);
    if (!out) return -1;
    for (;;) {
        char *eol;
        while ((eol = strstr(b->data ? b->data : "", "\r\n")) == NULL)
            if (buf_fill(fd, b) != 0) goto fail;
        size_t size = (size_t)strtoul(b->data, NULL, 16);
        buf_consume(b, (size_t)(eol - b->data) + 2);
        if (read_exact(fd, b, size + 2) != 0) goto fail;
        if (size == 0) {
            buf_consume(b, 2);
            break;
        }
        if (len + size + 1 > cap) {
            while (len + size + 1 > cap) cap *= 2;
            char *p = realloc(out, cap);
            if (!p) goto fail;
            out = p;
        }
        memcpy(out + len, b->data, size);
        len += size;
        buf_consume(b, size + 2);
    }
    out[len] = '\0';
    *body = out;
    *body_len = len;
    return 0;
fail:
    free(out);
    return -1;
}

static void *serve(void *arg) {
    conn *c = arg;
    receiver *rx = c->rx;
    buf_t b = {NULL, 0, 0};
    for (;;) {
        char *end;
        while ((end = find_crlfcrlf(&b)) == NULL)
            if (buf_fill(c->fd, &b) != 0) goto done;
        rx_request *req = calloc(1, sizeof *req);
        if (!req) goto done;
        size_t head_len = (size_t)(end - b.data);
        char *line_end = strstr(b.data, "\r\n");
        char *first = b.data;
        *line_end = '\0';
        sscanf(first, "%15s %511s", req->method, req->path);
        size_t hdr_len = head_len > (size_t)(line_end - b.data) + 2
                             ? head_len - (size_t)(line_end - b.data) - 2
                             : 0;
        req->headers = malloc(hdr_len + 3);
        if (!req->headers) {
            free(req);
            goto done;
        }
        memcpy(req->headers, line_end + 2, hdr_len);
        memcpy(req->headers + hdr_len, "\r\n", 3);
        buf_consume(&b, head_len + 4);
        char value[64];
        if (header_value(req->headers, "Transfer-Encoding", value, sizeof value) &&
            strcasecmp(value, "chunked") == 0) {
            if (read_chunked(c->fd, &b, &req->body, &req->body_len) != 0) {
                free(req->headers);
                free(req);
                goto done;
            }
        } else {
            size_t n = 0;
            if (header_value(req->headers, "Content-Length", value, sizeof value))
                n = (size_t)strtoul(value, NULL, 10);
            if (read_exact(c->fd, &b, n) != 0 || !(req->body = malloc(n + 1))) {
                free(req->headers);
                free(req);
                goto done;
            }
            memcpy(req->body, b.data, n);
            req->body[n] = '\0';
            req->body_len = n;
            buf_consume(&b, n);
        }
        pthread_mutex_lock(&rx->lock);
        if (rx->count == rx->cap) {
            size_t cap = rx->cap ? rx->cap * 2 : 64;
            rx_request **p = realloc(rx->requests, cap * sizeof *p);
            if (!p) {
                pthread_mutex_unlock(&rx->lock);
                free(req->headers);
                free(req->body);
                free(req);
                goto done;
            }
            rx->requests = p;
            rx->cap = cap;
        }
        rx->requests[rx->count++] = req;
        int status = rx->status, delay = rx->delay_ms;
        pthread_cond_broadcast(&rx->changed);
        pthread_mutex_unlock(&rx->lock);
        for (int waited = 0; waited < delay && !stopping(rx); waited += 10) sleep_ms(10);
        char resp[256];
        int n = snprintf(resp, sizeof resp,
                         "HTTP/1.1 %d Test\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
                         "Connection: keep-alive\r\n\r\nok",
                         status);
        if (send(c->fd, resp, (size_t)n, MSG_NOSIGNAL) != n) goto done;
    }
done:
    free(b.data);
    return NULL;
}

static void *accept_loop(void *arg) {
    receiver *rx = arg;
    for (;;) {
        int fd = accept(rx->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL;
        }
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->rx = rx;
        c->fd = fd;
        pthread_mutex_lock(&rx->lock);
        if (rx->stopping) {
            pthread_mutex_unlock(&rx->lock);
            close(fd);
            free(c);
            return NULL;
        }
        c->next = rx->conns;
        rx->conns = c;
        if (pthread_create(&c->thread, NULL, serve, c) != 0) {
            rx->conns = c->next;
            close(fd);
            free(c);
        }
        pthread_mutex_unlock(&rx->lock);
    }
}

receiver *rx_start(void) {
    receiver *rx = calloc(1, sizeof *rx);
    if (!rx) return NULL;
    rx->status = 200;
    pthread_mutex_init(&rx->lock, NULL);
    pthread_cond_init(&rx->changed, NULL);
    rx->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* 127.0.0.1 only */
    addr.sin_port = 0;
    socklen_t alen = sizeof addr;
    if (rx->listen_fd < 0 || bind(rx->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(rx->listen_fd, 64) != 0 ||
        getsockname(rx->listen_fd, (struct sockaddr *)&addr, &alen) != 0) {
        if (rx->listen_fd >= 0) close(rx->listen_fd);
        pthread_mutex_destroy(&rx->lock);
        pthread_cond_destroy(&rx->changed);
        free(rx);
        return NULL;
    }
    rx->port = ntohs(addr.sin_port);
    if (pthread_create(&rx->accept_thread, NULL, accept_loop, rx) != 0) {
        close(rx->listen_fd);
        free(rx);
        return NULL;
    }
    return rx;
}

int rx_port(const receiver *rx) { return rx->port; }

void rx_set_status(receiver *rx, int status) {
    pthread_mutex_lock(&rx->lock);
    rx->status = status;
    pthread_mutex_unlock(&rx->lock);
}

void rx_set_delay_ms(receiver *rx, int delay_ms) {
    pthread_mutex_lock(&rx->lock);
    rx->delay_ms = delay_ms;
    pthread_mutex_unlock(&rx->lock);
}

size_t rx_count(receiver *rx) {
    pthread_mutex_lock(&rx->lock);
    size_t n = rx->count;
    pthread_mutex_unlock(&rx->lock);
    return n;
}

int rx_wait_count(receiver *rx, size_t n, int timeout_ms) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        if (rx_count(rx) >= n) return 1;
        sleep_ms(10);
    }
    return rx_count(rx) >= n;
}

const rx_request *rx_get(receiver *rx, size_t i) {
    pthread_mutex_lock(&rx->lock);
    const rx_request *r = i < rx->count ? rx->requests[i] : NULL;
    pthread_mutex_unlock(&rx->lock);
    return r;
}

size_t rx_count_in_bodies(receiver *rx, const char *needle) {
    size_t hits = 0, nlen = strlen(needle);
    pthread_mutex_lock(&rx->lock);
    for (size_t i = 0; i < rx->count; i++) {
        const char *p = rx->requests[i]->body;
        while ((p = strstr(p, needle)) != NULL) {
            hits++;
            p += nlen;
        }
    }
    pthread_mutex_unlock(&rx->lock);
    return hits;
}

void rx_stop(receiver *rx) {
    if (!rx) return;
    pthread_mutex_lock(&rx->lock);
    rx->stopping = 1;
    for (conn *c = rx->conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&rx->lock);
    shutdown(rx->listen_fd, SHUT_RDWR);
    pthread_join(rx->accept_thread, NULL);
    close(rx->listen_fd);
    /* No new connection can appear now. */
    conn *c = rx->conns;
    while (c) {
        conn *next = c->next;
        shutdown(c->fd, SHUT_RDWR);
        pthread_join(c->thread, NULL);
        close(c->fd);
        free(c);
        c = next;
    }
    for (size_t i = 0; i < rx->count; i++) {
        free(rx->requests[i]->headers);
        free(rx->requests[i]->body);
        free(rx->requests[i]);
    }
    free(rx->requests);
    pthread_mutex_destroy(&rx->lock);
    pthread_cond_destroy(&rx->changed);
    free(rx);
}
