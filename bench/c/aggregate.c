/*
 * The baseline of the blocklist benchmark: exoledge's aggregate algorithm in plain C, to
 * tell how far our TypeScript is from what the machine can do with the same method.
 * Same steps, same rules, same output: read the file whole, parse each line strictly
 * (`#` and `;` comments, blanks, CRLF, host bits cleared, malformed lines skipped,
 * `::ffff:a.b.c.d` read as IPv4), sort (IPv4: the same two-pass 16-bit radix sort;
 * IPv6: qsort on 128-bit keys), sweep into disjoint ranges, split each range into its
 * largest aligned blocks, print one prefix per line (IPv4 first, IPv6 as RFC 5952
 * section 4 writes it). No budget, no report: only what the timed run of ours does.
 *
 * Build: cc -O2 -o bench/out/aggregate bench/c/aggregate.c (the benchmark does it).
 * Run:   bench/out/aggregate FILE > out.txt
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

typedef unsigned __int128 u128;

typedef struct {
  u128 address;
  uint8_t length;
} v6_t;

static uint32_t *v4a, *v4tmp;
static uint8_t *v4l, *v4ltmp;
static size_t v4n, v4cap;
static v6_t *v6;
static size_t v6n, v6cap;

static int ends_entry(int c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '#' || c == ';';
}

/* A strict decimal 0..max without leading zero in s[0, n); -1 if not. */
static int decimal(const char *s, size_t n, int max) {
  if (n == 0 || n > 3 || (n > 1 && s[0] == '0')) return -1;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v <= max ? v : -1;
}

static int parse_v4(const char *s, size_t n, uint32_t *out) {
  uint32_t a = 0;
  size_t i = 0;
  for (int part = 0; part < 4; part++) {
    size_t start = i;
    while (i < n && s[i] != '.') i++;
    int o = decimal(s + start, i - start, 255);
    if (o < 0) return 0;
    a = a * 256 + (uint32_t)o;
    if (part < 3) {
      if (i >= n) return 0;
      i++;
    }
  }
  if (i != n) return 0;
  *out = a;
  return 1;
}

static void push_v4(uint32_t a, int len) {
  if (v4n == v4cap) {
    v4cap = v4cap ? v4cap * 2 : 1 << 20;
    v4a = realloc(v4a, v4cap * sizeof *v4a);
    v4l = realloc(v4l, v4cap);
  }
  uint32_t mask = len == 0 ? 0 : 0xffffffffu << (32 - len);
  v4a[v4n] = a & mask;
  v4l[v4n++] = (uint8_t)len;
}

static void push_v6(u128 a, int len) {
  if (v6n == v6cap) {
    v6cap = v6cap ? v6cap * 2 : 1 << 16;
    v6 = realloc(v6, v6cap * sizeof *v6);
  }
  u128 mask = len == 0 ? 0 : ~(u128)0 << (128 - len);
  v6[v6n].address = a & mask;
  v6[v6n++].length = (uint8_t)len;
}

/* One entry token s[0, n): stored, or skipped when malformed. */
static void entry(const char *s, size_t n) {
  const char *slash = memchr(s, '/', n);
  size_t an = slash ? (size_t)(slash - s) : n;
  int is6 = memchr(s, ':', an) != NULL;
  int len = is6 ? 128 : 32;
  if (slash) {
    len = decimal(slash + 1, n - an - 1, is6 ? 128 : 32);
    if (len < 0) return;
  }
  if (!is6) {
    uint32_t a;
    if (parse_v4(s, an, &a)) push_v4(a, len);
    return;
  }
  char buf[64];
  unsigned char b[16];
  if (an >= sizeof buf || memchr(s, '%', an)) return;
  memcpy(buf, s, an);
  buf[an] = 0;
  if (inet_pton(AF_INET6, buf, b) != 1) return;
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (len >= 96 && memcmp(b, mapped, 12) == 0) {
    push_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15], len - 96);
    return;
  }
  u128 a = 0;
  for (int i = 0; i < 16; i++) a = a << 8 | b[i];
  push_v6(a, len);
}

static void parse(const char *p, const char *end) {
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    if (p < eol && *p != '#' && *p != ';') {
      const char *t = p;
      while (t < eol && !ends_entry(*t)) t++;
      const char *after = t;
      while (after < eol && (*after == ' ' || *after == '\t' || *after == '\r')) after++;
      if (after == eol || *after == '#' || *after == ';') entry(p, (size_t)(t - p));
    }
    p = eol + 1;
  }
}

static void radix_pass(const uint32_t *fa, const uint8_t *fl, uint32_t *ta, uint8_t *tl, size_t n,
                       uint32_t *offsets, int shift) {
  for (size_t i = 0; i < n; i++) {
    uint32_t at = offsets[(fa[i] >> shift) & 0xffff]++;
    ta[at] = fa[i];
    tl[at] = fl[i];
  }
}

static void sort_v4(void) {
  static uint32_t lo[65536], hi[65536];
  for (size_t i = 0; i < v4n; i++) {
    lo[v4a[i] & 0xffff]++;
    hi[v4a[i] >> 16]++;
  }
  uint32_t sl = 0, sh = 0;
  for (int d = 0; d < 65536; d++) {
    uint32_t c = lo[d];
    lo[d] = sl;
    sl += c;
    c = hi[d];
    hi[d] = sh;
    sh += c;
  }
  v4tmp = malloc(v4n * sizeof *v4tmp);
  v4ltmp = malloc(v4n);
  radix_pass(v4a, v4l, v4tmp, v4ltmp, v4n, lo, 0);
  radix_pass(v4tmp, v4ltmp, v4a, v4l, v4n, hi, 16);
}

static int cmp_v6(const void *x, const void *y) {
  u128 a = ((const v6_t *)x)->address, b = ((const v6_t *)y)->address;
  return a < b ? -1 : a > b;
}

static char *out;
static size_t outpos;

static void put_dec(unsigned n) {
  if (n >= 100) out[outpos++] = (char)('0' + n / 100);
  if (n >= 10) out[outpos++] = (char)('0' + n / 10 % 10);
  out[outpos++] = (char)('0' + n % 10);
}

static void print_v4(uint32_t a, int len) {
  put_dec(a >> 24);
  out[outpos++] = '.';
  put_dec(a >> 16 & 255);
  out[outpos++] = '.';
  put_dec(a >> 8 & 255);
  out[outpos++] = '.';
  put_dec(a & 255);
  out[outpos++] = '/';
  put_dec((unsigned)len);
  out[outpos++] = '\n';
}

static void print_v6(u128 a, int len) {
  static const char hex[] = "0123456789abcdef";
  unsigned g[8];
  for (int i = 0; i < 8; i++) g[i] = (unsigned)(a >> (112 - 16 * i)) & 0xffff;
  int best = -1, bestlen = 1;
  for (int i = 0; i < 8;) {
    if (g[i]) {
      i++;
      continue;
    }
    int j = i + 1;
    while (j < 8 && g[j] == 0) j++;
    if (j - i > bestlen) {
      best = i;
      bestlen = j - i;
    }
    i = j;
  }
  for (int i = 0; i < 8; i++) {
    if (i == best) {
      out[outpos++] = ':';
      out[outpos++] = ':';
      i += bestlen - 1;
      continue;
    }
    if (i > 0 && i != best + bestlen) out[outpos++] = ':';
    unsigned v = g[i];
    if (v >= 0x1000) out[outpos++] = hex[v >> 12];
    if (v >= 0x100) out[outpos++] = hex[v >> 8 & 15];
    if (v >= 0x10) out[outpos++] = hex[v >> 4 & 15];
    out[outpos++] = hex[v & 15];
  }
  out[outpos++] = '/';
  put_dec((unsigned)len);
  out[outpos++] = '\n';
}

/* The range [s, e] (inclusive, e < 2^32 as uint64) as its largest aligned blocks. */
static void split_v4(uint64_t s, uint64_t e) {
  while (s <= e) {
    int len = s == 0 ? 0 : 32 - __builtin_ctzll(s);
    uint64_t left = e - s + 1;
    int fit = 32 - (63 - __builtin_clzll(left));
    if (fit > len) len = fit;
    print_v4((uint32_t)s, len);
    s += (uint64_t)1 << (32 - len);
  }
}

static int ctz128(u128 x) {
  uint64_t lo = (uint64_t)x;
  return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(x >> 64));
}

static int bitlen128(u128 x) {
  uint64_t hi = (uint64_t)(x >> 64);
  return hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll((uint64_t)x);
}

/* [s, e] inclusive; `wrap` when e is the last address, so that e + 1 would overflow. */
static void split_v6(u128 s, u128 e) {
  for (;;) {
    int len = s == 0 ? 0 : 128 - ctz128(s);
    u128 left = e - s + 1;
    int fit = left == 0 ? 0 : 128 - bitlen128(left) + 1;
    if (fit > len) len = fit;
    print_v6(s, len);
    if (len == 0) return;
    u128 next = s + ((u128)1 << (128 - len));
    if (next == 0 || next > e) return;
    s = next;
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }
  const char *text = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : "";
  if (text == MAP_FAILED) {
    perror(argv[1]);
    return 1;
  }
  const char *p = text, *end = text + st.st_size;
  if (end - p >= 3 && (unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb && (unsigned char)p[2] == 0xbf) p += 3;
  parse(p, end);
  sort_v4();
  qsort(v6, v6n, sizeof *v6, cmp_v6);
  out = malloc(v4n * 20 + v6n * 45 + 64);

  if (v4n) {
    uint64_t start = v4a[0], end4 = start + ((uint64_t)1 << (32 - v4l[0])) - 1;
    int single = 1, len = v4l[0];
    for (size_t i = 1; i < v4n; i++) {
      uint64_t s = v4a[i], e = s + ((uint64_t)1 << (32 - v4l[i])) - 1;
      if (s <= end4 + 1) {
        if (e > end4) {
          end4 = e;
          single = 0;
        }
      } else {
        if (single) print_v4((uint32_t)start, len);
        else split_v4(start, end4);
        start = s;
        end4 = e;
        len = v4l[i];
        single = 1;
      }
    }
    if (single) print_v4((uint32_t)start, len);
    else split_v4(start, end4);
  }
  if (v6n) {
    u128 start = v6[0].address;
    u128 end6 = start + (v6[0].length == 0 ? ~(u128)0 : ((u128)1 << (128 - v6[0].length)) - 1);
    int single = 1, len = v6[0].length;
    for (size_t i = 1; i < v6n; i++) {
      u128 s = v6[i].address;
      u128 e = s + (v6[i].length == 0 ? ~(u128)0 : ((u128)1 << (128 - v6[i].length)) - 1);
      if (end6 == ~(u128)0 || s <= end6 + 1) {
        if (e > end6) {
          end6 = e;
          single = 0;
        }
      } else {
        if (single) print_v6(start, len);
        else split_v6(start, end6);
        start = s;
        end6 = e;
        len = v6[i].length;
        single = 1;
      }
    }
    if (single) print_v6(start, len);
    else split_v6(start, end6);
  }
  fwrite(out, 1, outpos, stdout);
  return 0;
}
