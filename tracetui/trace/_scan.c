/* Native fast path of the trace decoder: strict JSON in, Arrow columns out.
 *
 * scan(buffer, fields) reads a whole Chrome trace (a Kineto object or a bare event array)
 * and returns one column per requested field, full length (one row per element of
 * traceEvents), exported through the Arrow PyCapsule interface so polars takes the buffers
 * without copying or creating a Python object per value.
 *
 * It is a *fast path* only: it accepts exactly the well-formed traces whose promoted fields
 * have their usual JSON types, and answers anything else (broken JSON, invalid UTF-8, a bool
 * where a number belongs, an integer beyond 64 bits, a duplicate key, ...) with a one-line
 * reason string. The caller then takes the msgspec path, which knows every repair and
 * coercion; tests check that both paths build identical tables.
 *
 * fields: a sequence of (json key: bytes, kind: int, in_args: bool). Kinds:
 *   0 STR   string or null           -> large_string
 *   1 PH    string, absent = ""      -> large_string
 *   2 ID    integer or string / null -> large_string (integers as decimal digits)
 *   3 FLOAT number or null           -> float64
 *   4 INT   integer or null          -> int64
 *   5 RAW   any JSON value, as text  -> large_string (the exact bytes of the value)
 *   6 ARGS_START, 7 ARGS_END: byte offsets of the event's "args" object -> int64
 * Absent fields are null (PH: "").
 *
 * Returns (form, top, events_span, rows, columns, maybe_unsafe) with form "object" or
 * "array", top a list of (key, start, end) byte spans of the top-level values in file order
 * (traceEvents included), and per column whether a value may hold a character that
 * tracetui.safetext replaces (escapes, DEL, C1 controls, bidi controls: a superset, so
 * that the caller cleans only those columns); or a str saying why the fast path does not
 * apply. The parse runs without the GIL.
 *
 * pick(buffer, starts, ends, fields) reads args-level fields of the objects at the given byte
 * spans (the args offsets scan returned), one row each: the recorded shapes of chosen ops
 * without decoding every event again. It too parses without the GIL.
 *
 * Numbers are read the same in every locale (the C library's strtod follows LC_NUMERIC: a
 * decimal comma would stop it at the '.'); the parse never takes the GIL back, and it reads
 * only memory it owns or the caller's buffer, which the Py_buffer keeps alive (field keys
 * are copied in).
 *
 * nest(track, end) nests intervals already sorted by (track, start, end descending, ...) in
 * one stack pass, and marked_ancestor(parent, marked) finds each row's nearest marked
 * ancestor in one preorder pass: see their comments. Not JSON, but the same column export.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first: it defines _GNU_SOURCE, which declares strtod_l on glibc */
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__APPLE__) || defined(__FreeBSD__)
#include <xlocale.h>
#endif

/* ---- locale-independent number parsing ---- */
#ifdef _WIN32
typedef _locale_t c_locale_t;
static c_locale_t C_NUMERIC;
static int open_c_locale(void) { return (C_NUMERIC = _create_locale(LC_NUMERIC, "C")) != NULL; }
static double strtod_c(const char *text, char **stop) { return _strtod_l(text, stop, C_NUMERIC); }
#else
typedef locale_t c_locale_t;
static c_locale_t C_NUMERIC;
static int open_c_locale(void) { return (C_NUMERIC = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)) != (locale_t)0; }
static double strtod_c(const char *text, char **stop) { return strtod_l(text, stop, C_NUMERIC); }
#endif

/* ---- Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html) ---- */
#define ARROW_FLAG_NULLABLE 2

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};

enum { K_STR = 0, K_PH = 1, K_ID = 2, K_FLOAT = 3, K_INT = 4, K_RAW = 5, K_ARGS_START = 6, K_ARGS_END = 7, K_COUNT = 8 };
#define MAX_FIELDS 64
#define MAX_DEPTH 512

/* ---- growable column buffers ---- */

#define MAX_KEYLEN 64

typedef struct {
    int kind;
    int in_args;
    char key[MAX_KEYLEN]; /* a copy: the caller's objects may change while the GIL is released */
    Py_ssize_t keylen;
    int64_t last_row; /* row whose value is set (duplicate keys are refused) */
    uint8_t *validity;
    int64_t null_count;
    int maybe_unsafe;
    int64_t *values; /* INT / FLOAT (as bits) */
    int64_t *offsets; /* string kinds: rows + 1 */
    char *chars;
    size_t nchars, capchars;
} Col;

typedef struct {
    const char *base, *p, *end;
    const char *why; /* reason for refusing, NULL while fine */
    int unsafe;      /* set by skip_string on text that may need cleaning */
    Col cols[MAX_FIELDS];
    int ncols;
    Col *args_start, *args_end;
    struct TopSpan { const char *key; Py_ssize_t keylen, start, end; } *top;
    Py_ssize_t ntop, captop;
    /* columns by key length, per level (0 event, 1 args): indices, -1 terminated */
    signed char by_len[2][MAX_KEYLEN][MAX_FIELDS + 1];
    int64_t rows, cap;
} Scan;

static int is_string_kind(int kind) { return kind == K_STR || kind == K_PH || kind == K_ID || kind == K_RAW; }

static int fail(Scan *s, const char *why) {
    if (!s->why) s->why = why;
    return -1;
}

static int grow_rows_to(Scan *s, int64_t cap) {
    for (int i = 0; i < s->ncols; i++) {
        Col *c = &s->cols[i];
        uint8_t *v = realloc(c->validity, (size_t)(cap + 7) / 8);
        if (!v) return fail(s, "out of memory");
        memset(v + (s->cap + 7) / 8, 0, (size_t)((cap + 7) / 8 - (s->cap + 7) / 8));
        c->validity = v;
        if (is_string_kind(c->kind)) {
            int64_t *o = realloc(c->offsets, (size_t)(cap + 1) * sizeof(int64_t));
            if (!o) return fail(s, "out of memory");
            if (s->cap == 0) o[0] = 0;
            c->offsets = o;
        } else { /* zeroed, so null slots need no write (calloc leaves fresh pages untouched) */
            int64_t *x = c->values ? realloc(c->values, (size_t)cap * sizeof(int64_t))
                                   : calloc((size_t)cap, sizeof(int64_t));
            if (!x) return fail(s, "out of memory");
            if (c->values) memset(x + s->cap, 0, (size_t)(cap - s->cap) * sizeof(int64_t));
            c->values = x;
        }
    }
    s->cap = cap;
    return 0;
}

static int grow_rows(Scan *s) { return grow_rows_to(s, s->cap ? s->cap * 2 : 4096); }

static int reserve_chars(Scan *s, Col *c, size_t extra) {
    if (c->chars && c->nchars + extra <= c->capchars) return 0; /* allocated even for "" */
    size_t cap = c->capchars ? c->capchars : 1 << 16;
    while (cap < c->nchars + extra) cap *= 2;
    char *x = realloc(c->chars, cap);
    if (!x) return fail(s, "out of memory");
    c->chars = x;
    c->capchars = cap;
    return 0;
}

static inline void set_valid(Col *c, int64_t row) { c->validity[row >> 3] |= (uint8_t)(1u << (row & 7)); }

/* Close row `row` of every column: absent values become null (PH: ""). */
static void finish_row(Scan *s, int64_t row) {
    for (int i = 0; i < s->ncols; i++) {
        Col *c = &s->cols[i];
        if (c->last_row != row) {
            if (c->kind == K_PH) set_valid(c, row);
            else c->null_count++;
        }
        if (is_string_kind(c->kind)) c->offsets[row + 1] = (int64_t)c->nchars;
    }
}

/* ---- JSON lexing ---- */

static inline void skip_ws(Scan *s) {
    const char *p = s->p, *e = s->end;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    s->p = p;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* Bytes a string can hold as they are: printable ASCII except the quote and backslash. */
static unsigned char PLAIN[256];

static void init_plain(void) {
    for (int i = 0x20; i < 0x7F; i++) PLAIN[i] = i != '"' && i != '\\';
}

/* Length of the valid UTF-8 sequence starting at p (a byte >= 0x80), or 0. */
static inline int utf8_len(const unsigned char *p, const unsigned char *e) {
    unsigned char b = p[0];
    if (b >= 0xC2 && b <= 0xDF) {
        if (e - p >= 2 && (p[1] & 0xC0) == 0x80) return 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        if (e - p >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
            if (b == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
            if (b == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
            return 3;
        }
    } else if (b >= 0xF0 && b <= 0xF4) {
        if (e - p >= 4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
            if (b == 0xF0 && p[1] < 0x90) return 0; /* overlong */
            if (b == 0xF4 && p[1] >= 0x90) return 0; /* > U+10FFFF */
            return 4;
        }
    }
    return 0;
}

/* Validate the string at s->p (on its opening quote) without decoding it; *escaped tells
 * whether it holds backslashes. Leaves s->p after the closing quote. */
static int skip_string(Scan *s, const char **start, const char **stop, int *escaped) {
    const unsigned char *p = (const unsigned char *)s->p + 1, *e = (const unsigned char *)s->end;
    int esc = 0;
    *start = (const char *)p;
    for (;;) {
        while (e - p >= 4 && PLAIN[p[0]] && PLAIN[p[1]] && PLAIN[p[2]] && PLAIN[p[3]]) p += 4;
        while (p < e && PLAIN[*p]) p++;
        if (p >= e) return fail(s, "unterminated string");
        unsigned char ch = *p;
        if (ch == '"') break;
        if (ch == '\\') {
            esc = 1;
            if (p + 1 >= e) return fail(s, "unterminated string");
            unsigned char x = p[1];
            if (x == 'u') {
                unsigned v;
                if (e - p < 6 || hex4((const char *)p + 2, &v) < 0) return fail(s, "bad \\u escape");
                if (v < 0xA0 || (v >= 0x2000 && v < 0x2100)) s->unsafe = 1;
                p += 6;
            } else if (x == '"' || x == '\\' || x == '/') {
                p += 2;
            } else if (x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
                s->unsafe = 1;
                p += 2;
            } else {
                return fail(s, "bad escape");
            }
        } else if (ch < 0x20) {
            return fail(s, "raw control character in a string");
        } else if (ch == 0x7F) {
            s->unsafe = 1;
            p++;
        } else {
            if (ch == 0xC2 || ch == 0xE2) s->unsafe = 1; /* C1 controls, bidi controls */
            int n = utf8_len(p, e);
            if (!n) return fail(s, "invalid UTF-8");
            p += n;
        }
    }
    *stop = (const char *)p;
    *escaped = esc;
    s->p = (const char *)p + 1;
    return 0;
}

static void put_utf8(char **out, unsigned cp) {
    char *o = *out;
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    *out = o;
}

/* Decode the string at s->p and append it to the column's characters. */
static int read_string(Scan *s, Col *c) {
    const char *a, *b;
    int escaped;
    if (skip_string(s, &a, &b, &escaped) < 0) return -1;
    size_t n = (size_t)(b - a);
    if (reserve_chars(s, c, n) < 0) return -1; /* decoded text is never longer */
    if (!escaped) {
        memcpy(c->chars + c->nchars, a, n);
        c->nchars += n;
        return 0;
    }
    char *o = c->chars + c->nchars;
    const char *p = a;
    while (p < b) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        char x = p[1];
        p += 2;
        switch (x) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p, &cp) < 0) return fail(s, "bad \\u escape"); /* skip_string checked it */
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (b - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) < 0 || lo < 0xDC00 ||
                    lo > 0xDFFF)
                    return fail(s, "unpaired surrogate escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return fail(s, "unpaired surrogate escape");
            }
            put_utf8(&o, cp);
            break;
        }
        default: *o++ = x; /* " \ / */
        }
    }
    c->nchars = (size_t)(o - c->chars);
    return 0;
}

typedef struct {
    int is_int;      /* an integer literal that fits int64 */
    int64_t i;
    double d;
} Number;

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Parse a JSON number at s->p (strict grammar). Values that are not finite doubles, and
 * integer literals beyond int64, are refused. With out == NULL only the grammar is checked:
 * big or odd numbers are fine where nobody reads them. */
static int read_number(Scan *s, Number *out) {
    const char *p = s->p, *e = s->end, *start = p;
    int neg = 0;
    if (p < e && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= e || *p < '0' || *p > '9') return fail(s, "bad number");
    uint64_t mant = 0;
    int digits = 0, dropped = 0; /* significant digits kept, integer digits not kept */
    if (*p == '0') {
        p++;
        if (p < e && *p >= '0' && *p <= '9') return fail(s, "leading zero");
    } else {
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                digits++;
            } else {
                dropped++;
            }
            p++;
        }
    }
    int is_int = 1, exp10 = dropped;
    if (p < e && *p == '.') {
        is_int = 0;
        p++;
        if (p >= e || *p < '0' || *p > '9') return fail(s, "bad number");
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits < 19 && !(mant == 0 && *p == '0' && digits == 0)) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                digits++;
                exp10--;
            } else if (mant == 0 && *p == '0' && digits == 0) {
                exp10--;
            } else {
                dropped++; /* lost precision: the slow parser below decides */
            }
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || *p < '0' || *p > '9') return fail(s, "bad number");
        while (p < e && *p >= '0' && *p <= '9') p++;
        dropped = 1; /* exponents are rare: leave them to the exact parser */
    }
    s->p = p;
    if (!out) return 0;
    out->is_int = 0;
    if (is_int) {
        if (dropped || mant > (uint64_t)INT64_MAX + (uint64_t)neg) return fail(s, "integer beyond 64 bits");
        out->is_int = 1;
        out->i = neg ? (int64_t)(0 - mant) : (int64_t)mant;
        out->d = (double)out->i;
        return 0;
    }
    if (!dropped && mant <= (1ULL << 53) && exp10 >= -22 && exp10 <= 0) {
        double d = (double)mant / POW10[-exp10]; /* exact operands: correctly rounded */
        out->d = neg ? -d : d;
        return 0;
    }
    char buf[400];
    size_t n = (size_t)(p - start);
    if (n >= sizeof buf) return fail(s, "number too long");
    memcpy(buf, start, n);
    buf[n] = 0;
    /* The C library's strtod is correctly rounded; in the "C" locale it reads the '.' of JSON
     * whatever LC_NUMERIC the process has set. */
    char *stop;
    double d = strtod_c(buf, &stop);
    if (stop != buf + n) return fail(s, "bad number");
    if (!isfinite(d)) return fail(s, "number out of range");
    out->d = d;
    return 0;
}

static int skip_value(Scan *s, int depth);

/* ---- the grammar steps every container shares ---- */

/* Step over an opening bracket; 1 when the container is empty (its closer consumed too). */
static int open_container(Scan *s, char close) {
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 1;
    }
    return 0;
}

/* A member's key ([*a, *b) its raw text, *esc whether it holds escapes) and the colon after
 * it; leaves s->p on the value. */
static int read_key(Scan *s, const char **a, const char **b, int *esc) {
    skip_ws(s);
    if (s->p >= s->end || *s->p != '"') return fail(s, "expected a key");
    if (skip_string(s, a, b, esc) < 0) return -1;
    skip_ws(s);
    if (s->p >= s->end || *s->p != ':') return fail(s, "expected ':'");
    s->p++;
    skip_ws(s);
    return 0;
}

/* After a member or an element: 1 when a ',' announces another, 0 at the closer, -1 else. */
static int next_or_close(Scan *s, char close) {
    skip_ws(s);
    if (s->p >= s->end) return fail(s, "truncated");
    if (*s->p == ',') {
        s->p++;
        return 1;
    }
    if (*s->p == close) {
        s->p++;
        return 0;
    }
    return fail(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

static int skip_literal(Scan *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return fail(s, "invalid JSON");
    s->p += n;
    return 0;
}

static int skip_value(Scan *s, int depth) {
    if (depth > MAX_DEPTH) return fail(s, "nested too deep");
    skip_ws(s);
    if (s->p >= s->end) return fail(s, "truncated");
    const char *a, *b;
    int esc;
    switch (*s->p) {
    case '"': return skip_string(s, &a, &b, &esc);
    case '{': {
        int more = !open_container(s, '}');
        while (more > 0) {
            if (read_key(s, &a, &b, &esc) < 0 || skip_value(s, depth + 1) < 0) return -1;
            more = next_or_close(s, '}');
        }
        return more;
    }
    case '[': {
        int more = !open_container(s, ']');
        while (more > 0) {
            if (skip_value(s, depth + 1) < 0) return -1;
            more = next_or_close(s, ']');
        }
        return more;
    }
    case 't': return skip_literal(s, "true", 4);
    case 'f': return skip_literal(s, "false", 5);
    case 'n': return skip_literal(s, "null", 4);
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) return read_number(s, NULL);
        return fail(s, "invalid JSON");
    }
}

/* ---- typed fields ---- */

/* Decimal digits of v (as Python's str(int) writes them); returns the length. */
static size_t put_decimal(char *out, int64_t v) {
    char tmp[24];
    size_t n = 0, len = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) out[len++] = '-';
    while (n) out[len++] = tmp[--n];
    return len;
}

static int is_null(Scan *s) { return s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0; }

static int read_value(Scan *s, Col *c, int64_t row);

static int read_field(Scan *s, Col *c, int64_t row) {
    s->unsafe = 0;
    int rc = read_value(s, c, row);
    if (s->unsafe) c->maybe_unsafe = 1;
    return rc;
}

static int read_value(Scan *s, Col *c, int64_t row) {
    if (c->last_row == row) return fail(s, "duplicate key");
    c->last_row = row;
    skip_ws(s);
    if (s->p >= s->end) return fail(s, "truncated");
    char ch = *s->p;
    if (c->kind == K_RAW) {
        const char *start = s->p;
        if (skip_value(s, 1) < 0) return -1;
        size_t n = (size_t)(s->p - start);
        if (reserve_chars(s, c, n) < 0) return -1;
        memcpy(c->chars + c->nchars, start, n);
        c->nchars += n;
        set_valid(c, row);
        return 0;
    }
    if (ch == 'n') {
        if (!is_null(s)) return fail(s, "invalid JSON");
        if (c->kind == K_PH) return fail(s, "null phase");
        s->p += 4;
        c->null_count++;
        return 0;
    }
    if (ch == '"') {
        if (c->kind != K_STR && c->kind != K_PH && c->kind != K_ID) return fail(s, "a string where a number belongs");
        if (read_string(s, c) < 0) return -1;
        set_valid(c, row);
        return 0;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        Number num;
        if (c->kind == K_STR || c->kind == K_PH) return fail(s, "a number where a string belongs");
        if (read_number(s, &num) < 0) return -1;
        if (c->kind == K_FLOAT) {
            memcpy(&c->values[row], &num.d, sizeof(double));
        } else {
            if (!num.is_int) return fail(s, "a fraction where an integer belongs");
            if (c->kind == K_INT) {
                c->values[row] = num.i;
            } else { /* K_ID: decimal digits */
                if (reserve_chars(s, c, 24) < 0) return -1;
                c->nchars += put_decimal(c->chars + c->nchars, num.i);
            }
        }
        set_valid(c, row);
        return 0;
    }
    return fail(s, "an unexpected value type");
}

/* The column for key [a, b) among those with in_args == where, or NULL. */
static inline Col *find_col(Scan *s, const char *a, const char *b, int where) {
    Py_ssize_t n = b - a;
    if (n >= MAX_KEYLEN) return NULL;
    for (const signed char *i = s->by_len[where][n]; *i >= 0; i++) {
        Col *c = &s->cols[*i];
        if (c->key[0] == a[0] && memcmp(c->key, a, (size_t)n) == 0) return c;
    }
    return NULL;
}

static void put_offset(Col *c, int64_t row, int64_t offset) {
    c->values[row] = offset;
    c->last_row = row;
    set_valid(c, row);
}

/* An object's members: known keys go to their columns, "args" (at event level) recurses. */
static int read_object(Scan *s, int64_t row, int where) {
    int seen_args = 0, more = !open_container(s, '}');
    while (more > 0) {
        const char *a, *b;
        int esc;
        if (read_key(s, &a, &b, &esc) < 0) return -1;
        if (esc) return fail(s, "escaped key");
        if (!where && b - a == 4 && memcmp(a, "args", 4) == 0) {
            if (seen_args++) return fail(s, "duplicate key");
            if (s->p >= s->end || *s->p != '{') return fail(s, "args is not an object");
            int64_t start = s->p - s->base;
            if (read_object(s, row, 1) < 0) return -1;
            if (s->args_start) put_offset(s->args_start, row, start);
            if (s->args_end) put_offset(s->args_end, row, s->p - s->base);
        } else {
            Col *c = find_col(s, a, b, where);
            if (c ? read_field(s, c, row) : skip_value(s, 1)) return -1;
        }
        more = next_or_close(s, '}');
    }
    return more;
}

static int read_events(Scan *s) {
    int more = !open_container(s, ']');
    while (more > 0) {
        skip_ws(s);
        if (s->p >= s->end) return fail(s, "truncated");
        if (*s->p != '{') return fail(s, "an event that is not an object");
        if (s->rows == s->cap && grow_rows(s) < 0) return -1;
        if (read_object(s, s->rows, 0) < 0) return -1;
        finish_row(s, s->rows);
        s->rows++;
        more = next_or_close(s, ']');
    }
    return more;
}

/* ---- the Column type: one finished column, exported once as an Arrow array ---- */

typedef struct {
    PyObject_HEAD
    int kind;
    int64_t length, null_count;
    uint8_t *validity;
    void *data;       /* values, or characters */
    int64_t *offsets; /* string kinds */
} ColumnObject;

typedef struct {
    void *a, *b, *c, *d;
    const void *buffers[4];
} Owned;

static void release_array(struct ArrowArray *array) {
    Owned *own = array->private_data;
    free(own->a);
    free(own->b);
    free(own->c);
    free(own->d);
    free(own);
    array->release = NULL;
}

static void release_schema(struct ArrowSchema *schema) { schema->release = NULL; }

static void schema_capsule_free(PyObject *capsule) {
    struct ArrowSchema *schema = PyCapsule_GetPointer(capsule, "arrow_schema");
    if (schema && schema->release) schema->release(schema);
    free(schema);
}

static void array_capsule_free(PyObject *capsule) {
    struct ArrowArray *array = PyCapsule_GetPointer(capsule, "arrow_array");
    if (array && array->release) array->release(array);
    free(array);
}

/* The 16-byte views of Arrow's string view layout for strings at offsets into chars
 * (one data buffer): length, then the string itself when it fits in 12 bytes, else its
 * first 4 bytes, buffer 0 and its offset. */
static uint8_t *string_views(const int64_t *offsets, const char *chars, int64_t n) {
    uint8_t *views = calloc((size_t)(n ? n : 1), 16);
    if (!views) return NULL;
    for (int64_t i = 0; i < n; i++) {
        uint8_t *v = views + 16 * i;
        int32_t len = (int32_t)(offsets[i + 1] - offsets[i]), start = (int32_t)offsets[i];
        memcpy(v, &len, 4);
        if (len <= 12) {
            memcpy(v + 4, chars + start, (size_t)len);
        } else {
            memcpy(v + 4, chars + start, 4);
            memcpy(v + 12, &start, 4); /* buffer index 0 stays zero at v + 8 */
        }
    }
    return views;
}

static PyObject *column_arrow_c_array(ColumnObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", names, &requested)) return NULL;
    if (!self->data) {
        PyErr_SetString(PyExc_RuntimeError, "column already exported");
        return NULL;
    }
    struct ArrowSchema *schema = calloc(1, sizeof *schema);
    struct ArrowArray *array = calloc(1, sizeof *array);
    Owned *own = calloc(1, sizeof *own);
    if (!schema || !array || !own) {
        free(schema);
        free(array);
        free(own);
        return PyErr_NoMemory();
    }
    int strings = is_string_kind(self->kind);
    /* Text goes out as a string view array (polars' own layout: no conversion on import);
     * characters beyond 2 GiB would overflow its 32-bit offsets, so such a column goes out
     * as a large string array. */
    int views = strings && self->offsets[self->length] < INT32_MAX;
    schema->format = views ? "vu" : strings ? "U" : self->kind == K_FLOAT ? "g" : "l";
    schema->name = "";
    schema->flags = ARROW_FLAG_NULLABLE;
    schema->release = release_schema;
    own->a = self->validity;
    own->b = strings ? (void *)self->offsets : self->data;
    own->c = strings ? self->data : NULL;
    if (views) {
        own->b = string_views(self->offsets, self->data, self->length);
        own->d = malloc(sizeof(int64_t));
        if (!own->b || !own->d) {
            free(own->b);
            free(own->d);
            free(own);
            free(array);
            free(schema);
            return PyErr_NoMemory();
        }
        *(int64_t *)own->d = self->offsets[self->length];
        free(self->offsets);
        self->offsets = NULL;
    }
    own->buffers[0] = self->null_count ? self->validity : NULL;
    own->buffers[1] = own->b;
    own->buffers[2] = own->c;
    own->buffers[3] = own->d;
    array->length = self->length;
    array->null_count = self->null_count;
    array->n_buffers = views ? 4 : strings ? 3 : 2;
    array->buffers = own->buffers;
    array->release = release_array;
    array->private_data = own;
    self->validity = NULL;
    self->data = NULL;
    self->offsets = NULL;
    PyObject *sc = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
    if (!sc) {
        release_array(array);
        free(array);
        free(schema);
        return NULL;
    }
    PyObject *ac = PyCapsule_New(array, "arrow_array", array_capsule_free);
    if (!ac) {
        Py_DECREF(sc);
        release_array(array);
        free(array);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, sc, ac);
    Py_DECREF(sc);
    Py_DECREF(ac);
    return out;
}

static Py_ssize_t column_len(ColumnObject *self) { return (Py_ssize_t)self->length; }

static void column_dealloc(ColumnObject *self) {
    free(self->validity);
    free(self->data);
    free(self->offsets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef column_methods[] = {
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))column_arrow_c_array, METH_VARARGS | METH_KEYWORDS,
     "Export the column (once) through the Arrow PyCapsule interface."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods column_as_sequence = {.sq_length = (lenfunc)column_len};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetui.trace._scan.Column",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_dealloc = (destructor)column_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One decoded column, exported through __arrow_c_array__.",
    .tp_methods = column_methods,
    .tp_as_sequence = &column_as_sequence,
};

static PyObject *column_from(Col *c, int64_t rows) {
    ColumnObject *obj = PyObject_New(ColumnObject, &ColumnType);
    if (!obj) return NULL;
    obj->kind = c->kind;
    obj->length = rows;
    obj->null_count = c->null_count;
    obj->validity = c->validity ? c->validity : calloc(1, 8);
    obj->offsets = NULL;
    if (is_string_kind(c->kind)) {
        obj->offsets = c->offsets ? c->offsets : calloc(1, 8);
        obj->data = c->chars ? c->chars : malloc(8);
        c->chars = NULL;
        c->offsets = NULL;
    } else {
        obj->data = c->values ? c->values : malloc(8);
        c->values = NULL;
    }
    c->validity = NULL;
    if (!obj->validity || !obj->data || (is_string_kind(c->kind) && !obj->offsets)) {
        Py_DECREF(obj);
        return PyErr_NoMemory();
    }
    return (PyObject *)obj;
}

static void free_cols(Scan *s) {
    for (int i = 0; i < s->ncols; i++) {
        free(s->cols[i].validity);
        free(s->cols[i].values);
        free(s->cols[i].offsets);
        free(s->cols[i].chars);
    }
}

/* ---- the entry point ---- */

static int add_top(Scan *s, const char *key, Py_ssize_t keylen, Py_ssize_t start, Py_ssize_t end) {
    if (s->ntop == s->captop) {
        Py_ssize_t cap = s->captop ? s->captop * 2 : 16;
        struct TopSpan *t = realloc(s->top, (size_t)cap * sizeof *t);
        if (!t) return fail(s, "out of memory");
        s->top = t;
        s->captop = cap;
    }
    s->top[s->ntop++] = (struct TopSpan){key, keylen, start, end};
    return 0;
}

/* Parse the document; runs without the GIL (s->thread holds the saved state). */
static int parse_document(Scan *s, Py_ssize_t *ev_a, Py_ssize_t *ev_b, int *form) {
    skip_ws(s);
    if (s->p >= s->end) return fail(s, "empty");
    if (*s->p == '[') {
        *form = 1;
        *ev_a = s->p - s->base;
        if (read_events(s) < 0) return -1;
        *ev_b = s->p - s->base;
    } else if (*s->p == '{') {
        int found = 0, more = !open_container(s, '}');
        while (more > 0) {
            const char *a, *b;
            int esc;
            if (read_key(s, &a, &b, &esc) < 0) return -1;
            if (esc) return fail(s, "escaped key");
            Py_ssize_t va = s->p - s->base;
            int events = b - a == 11 && memcmp(a, "traceEvents", 11) == 0;
            if (events) {
                if (found++) return fail(s, "duplicate traceEvents");
                if (s->p >= s->end || *s->p != '[') return fail(s, "traceEvents is not an array");
                if (read_events(s) < 0) return -1;
                *ev_a = va;
                *ev_b = s->p - s->base;
            } else if (skip_value(s, 1) < 0) {
                return -1;
            }
            if (add_top(s, a, b - a, va, s->p - s->base) < 0) return -1;
            more = next_or_close(s, '}');
        }
        if (more < 0) return -1;
        if (!found) return fail(s, "no traceEvents");
        *form = 0;
    } else {
        return fail(s, "not a JSON object or array");
    }
    skip_ws(s);
    if (s->p != s->end) return fail(s, "trailing data");
    return 0;
}

/* Read the (key, kind, in_args) field spec into s; -1 with an exception set on error. */
static int setup_fields(Scan *s, PyObject *seq) {
    Py_ssize_t nf = PySequence_Fast_GET_SIZE(seq);
    if (nf > MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "too many fields");
        return -1;
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        const char *key;
        Py_ssize_t keylen;
        int kind, in_args;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#ip", &key, &keylen, &kind, &in_args)) return -1;
        if (kind < 0 || kind >= K_COUNT || keylen < 1 || keylen >= MAX_KEYLEN) {
            PyErr_SetString(PyExc_ValueError, "bad field spec");
            return -1;
        }
        Col *c = &s->cols[s->ncols++];
        c->kind = kind;
        c->in_args = in_args;
        memcpy(c->key, key, (size_t)keylen);
        c->keylen = keylen;
        c->last_row = -1;
        if (kind == K_ARGS_START || kind == K_ARGS_END) {
            if (kind == K_ARGS_START) s->args_start = c;
            else s->args_end = c;
            c->in_args = 2; /* never matched as a key */
        }
    }
    for (int w = 0; w < 2; w++) /* columns by key length, per level */
        for (int n = 0; n < MAX_KEYLEN; n++) {
            int k = 0;
            for (int i = 0; i < s->ncols; i++)
                if (s->cols[i].in_args == w && s->cols[i].keylen == n) s->by_len[w][n][k++] = (signed char)i;
            s->by_len[w][n][k] = -1;
        }
    return 0;
}

/* (columns, maybe_unsafe) of the finished rows; NULL with an exception set on error. */
static PyObject *build_columns(Scan *s) {
    if (s->cap == 0 && grow_rows(s) < 0) return PyErr_NoMemory();
    PyObject *columns = PyList_New(s->ncols), *unsafe = PyTuple_New(s->ncols);
    if (!columns || !unsafe) {
        Py_XDECREF(columns);
        Py_XDECREF(unsafe);
        return NULL;
    }
    for (int i = 0; i < s->ncols; i++) {
        PyTuple_SET_ITEM(unsafe, i, PyBool_FromLong(s->cols[i].maybe_unsafe));
        PyObject *col = column_from(&s->cols[i], s->rows);
        if (!col) {
            Py_DECREF(columns);
            Py_DECREF(unsafe);
            return NULL;
        }
        PyList_SET_ITEM(columns, i, col);
    }
    return Py_BuildValue("(NN)", columns, unsafe);
}

static void free_scan(Scan *s) {
    if (!s) return;
    free_cols(s);
    free(s->top);
    free(s);
}

static PyObject *scan(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer view;
    PyObject *fields;
    if (!PyArg_ParseTuple(args, "y*O", &view, &fields)) return NULL;
    PyObject *seq = PySequence_Fast(fields, "fields must be a sequence");
    Scan *s = calloc(1, sizeof(Scan));
    PyObject *result = NULL;
    if (!seq || !s) {
        if (!s) PyErr_NoMemory();
        goto done;
    }
    if (setup_fields(s, seq) < 0) goto done;
    s->base = s->p = view.buf;
    s->end = s->base + view.len;
    Py_ssize_t ev_a = 0, ev_b = 0;
    int form = 0, rc;
    Py_BEGIN_ALLOW_THREADS
    rc = grow_rows_to(s, view.len / 320 + 1024); /* Kineto events average ~340 bytes */
    if (rc == 0) rc = parse_document(s, &ev_a, &ev_b, &form);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        result = PyUnicode_FromFormat("%s at byte %zd", s->why, (Py_ssize_t)(s->p - s->base));
        goto done;
    }
    PyObject *top = PyList_New(s->ntop);
    if (!top) goto done;
    for (Py_ssize_t i = 0; i < s->ntop; i++) {
        struct TopSpan *t = &s->top[i];
        PyObject *item = Py_BuildValue("(s#nn)", t->key, t->keylen, t->start, t->end);
        if (!item) {
            Py_DECREF(top);
            goto done;
        }
        PyList_SET_ITEM(top, i, item);
    }
    PyObject *built = build_columns(s);
    if (!built) {
        Py_DECREF(top);
        goto done;
    }
    result = Py_BuildValue("(sN(nn)LOO)", form ? "array" : "object", top, ev_a, ev_b, (long long)s->rows,
                           PyTuple_GET_ITEM(built, 0), PyTuple_GET_ITEM(built, 1));
    Py_DECREF(built);
done:
    free_scan(s);
    Py_XDECREF(seq);
    PyBuffer_Release(&view);
    return result;
}

/* Byte offsets of a sequence of ints or None (None: -1, a negative int: -2); -1 with a
 * Python error set. */
static int read_offsets(PyObject *seq, Py_ssize_t n, Py_ssize_t *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (item == Py_None) {
            out[i] = -1;
            continue;
        }
        Py_ssize_t offset = PyLong_AsSsize_t(item);
        if (offset == -1 && PyErr_Occurred()) return -1;
        out[i] = offset < 0 ? -2 : offset;
    }
    return 0;
}

/* Read the objects at [start[i], end[i]) (-1: none, the row is null) into rows 0..n-1;
 * runs without the GIL. -1 with s->why (and *bad, the row) on a refusal. */
static int pick_rows(Scan *s, const Py_ssize_t *start, const Py_ssize_t *end, Py_ssize_t n, Py_ssize_t len,
                     Py_ssize_t *bad) {
    for (Py_ssize_t i = 0; i < n; i++) {
        *bad = i;
        if (start[i] != -1 && end[i] != -1) {
            if (start[i] < 0 || end[i] > len || start[i] >= end[i] || s->base[start[i]] != '{')
                return fail(s, "a span that is not an object");
            s->p = s->base + start[i];
            s->end = s->base + end[i];
            if (read_object(s, i, 1) < 0) return -1;
            if (s->p != s->end) return fail(s, "trailing data");
        }
        finish_row(s, i);
        s->rows++;
    }
    return 0;
}

/* pick(buffer, starts, ends, fields): the given args-level fields of the JSON objects at
 * byte spans [starts[i], ends[i]) of buffer (None: no object, all null), one row each.
 * Returns (columns, maybe_unsafe) like scan, or a str saying why not. */
static PyObject *pick(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer view;
    PyObject *starts_obj, *ends_obj, *fields;
    if (!PyArg_ParseTuple(args, "y*OOO", &view, &starts_obj, &ends_obj, &fields)) return NULL;
    PyObject *seq = PySequence_Fast(fields, "fields must be a sequence");
    PyObject *starts = PySequence_Fast(starts_obj, "starts must be a sequence");
    PyObject *ends = PySequence_Fast(ends_obj, "ends must be a sequence");
    Scan *s = calloc(1, sizeof(Scan));
    Py_ssize_t *spans = NULL;
    PyObject *result = NULL;
    if (!seq || !starts || !ends || !s) {
        if (!s) PyErr_NoMemory();
        goto done;
    }
    if (setup_fields(s, seq) < 0) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(starts);
    if (PySequence_Fast_GET_SIZE(ends) != n) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    spans = malloc((size_t)(2 * n + 1) * sizeof(Py_ssize_t));
    if (!spans || grow_rows_to(s, n + 1) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_offsets(starts, n, spans) < 0 || read_offsets(ends, n, spans + n) < 0) goto done;
    s->base = view.buf;
    Py_ssize_t bad = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = pick_rows(s, spans, spans + n, n, view.len, &bad);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        result = PyUnicode_FromFormat("%s in object %zd", s->why ? s->why : "refused", bad);
    else
        result = build_columns(s);
done:
    free(spans);
    free_scan(s);
    Py_XDECREF(seq);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    PyBuffer_Release(&view);
    return result;
}

/* ---- nesting: one stack pass over sorted intervals ---- */

/* Copy an int64 Arrow stream (any number of chunks, no nulls) into one malloc'd array.
 * Returns the number of values, or -1 with a Python error set, or -2 when the stream is not
 * plain int64 without nulls (the caller then takes its other path). */
static int64_t read_int64_stream(PyObject *obj, int64_t **out) {
    *out = NULL;
    PyObject *capsule = PyObject_CallMethod(obj, "__arrow_c_stream__", NULL);
    if (!capsule) return -1;
    struct ArrowArrayStream *stream = PyCapsule_GetPointer(capsule, "arrow_array_stream");
    if (!stream) {
        Py_DECREF(capsule);
        return -1;
    }
    int64_t n = 0, cap = 0, status = 0;
    struct ArrowSchema schema = {0};
    if (stream->get_schema(stream, &schema) != 0 || !schema.format || strcmp(schema.format, "l") != 0) status = -2;
    if (schema.release) schema.release(&schema);
    while (status == 0) {
        struct ArrowArray chunk = {0};
        if (stream->get_next(stream, &chunk) != 0) {
            status = -2;
            break;
        }
        if (!chunk.release) break; /* end of stream */
        if (chunk.null_count != 0 || chunk.n_buffers != 2 || (chunk.length && !chunk.buffers[1])) {
            status = -2;
        } else if (chunk.length) {
            if (n + chunk.length > cap) {
                cap = (n + chunk.length) * 2;
                int64_t *grown = realloc(*out, (size_t)cap * sizeof(int64_t));
                if (!grown) {
                    PyErr_NoMemory();
                    status = -1;
                } else {
                    *out = grown;
                }
            }
            if (status == 0) {
                memcpy(*out + n, (const int64_t *)chunk.buffers[1] + chunk.offset,
                       (size_t)chunk.length * sizeof(int64_t));
                n += chunk.length;
            }
        }
        chunk.release(&chunk);
    }
    Py_DECREF(capsule); /* releases the stream */
    if (status != 0) {
        free(*out);
        *out = NULL;
        return status;
    }
    if (!*out) *out = malloc(sizeof(int64_t));
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    return n;
}

/* The two int64 columns a pass reads: 1 when both were read (same length, in *a, *b, *n),
 * 0 when the pass does not apply (not plain int64 without nulls, or lengths differ), -1
 * with a Python error set. */
static int read_int64_pair(PyObject *args, int64_t **a, int64_t **b, int64_t *n) {
    PyObject *a_obj, *b_obj;
    *a = *b = NULL;
    if (!PyArg_ParseTuple(args, "OO", &a_obj, &b_obj)) return -1;
    int64_t na = read_int64_stream(a_obj, a);
    int64_t nb = na < 0 ? na : read_int64_stream(b_obj, b);
    if (na >= 0 && nb == na) {
        *n = na;
        return 1;
    }
    free(*a);
    free(*b);
    *a = *b = NULL;
    return na == -1 || nb == -1 ? -1 : 0;
}

/* An output column of n int64 values (at least one byte allocated). */
static int64_t *int64_values(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(int64_t)); }

static PyObject *int64_column(int64_t *values, int64_t n) {
    ColumnObject *obj = PyObject_New(ColumnObject, &ColumnType);
    if (!obj) {
        free(values);
        return NULL;
    }
    obj->kind = K_INT;
    obj->length = n;
    obj->null_count = 0;
    obj->validity = calloc(1, 8);
    obj->data = values;
    obj->offsets = NULL;
    if (!obj->validity) {
        Py_DECREF(obj);
        return PyErr_NoMemory();
    }
    return (PyObject *)obj;
}

/* nest(track, end): rows sorted by (track, start, end descending, rank, id); both int64
 * without nulls. The parent of a row is the nearest earlier row of its track whose end is
 * at least its own (a stack of open intervals: rows that end before the new row starts
 * nesting are closed); a row that starts inside an open interval but ends after it closes
 * that interval and becomes its sibling. Returns four int64 columns (positions, -1 for
 * none): parent, depth, end (one past the row's subtree) and previous sibling; or None
 * when a column is not plain int64 without nulls. */
static PyObject *nest(PyObject *module, PyObject *args) {
    (void)module;
    int64_t *track, *end, n;
    int got = read_int64_pair(args, &track, &end, &n);
    if (got <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    int64_t *parent = int64_values(n), *depth = int64_values(n), *stop = int64_values(n);
    int64_t *prev = int64_values(n), *last_child = int64_values(n), *stack = int64_values(n);
    if (!parent || !depth || !stop || !prev || !last_child || !stack) {
        free(parent), free(depth), free(stop), free(prev), free(last_child), free(stack);
        free(track), free(end);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    int64_t top = 0, last_root = -1;
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && track[i] != track[i - 1]) { /* a new track: close everything */
            while (top) stop[stack[--top]] = i;
            last_root = -1;
        }
        while (top && end[stack[top - 1]] < end[i]) stop[stack[--top]] = i;
        int64_t up = top ? stack[top - 1] : -1;
        parent[i] = up;
        depth[i] = up < 0 ? 0 : depth[up] + 1;
        prev[i] = up < 0 ? last_root : last_child[up];
        if (up < 0)
            last_root = i;
        else
            last_child[up] = i;
        last_child[i] = -1;
        stack[top++] = i;
    }
    while (top) stop[stack[--top]] = n;
    Py_END_ALLOW_THREADS
    free(last_child);
    free(stack);
    free(track);
    free(end);
    PyObject *cols[4] = {int64_column(parent, n), int64_column(depth, n), int64_column(stop, n),
                         int64_column(prev, n)};
    PyObject *out = NULL;
    if (cols[0] && cols[1] && cols[2] && cols[3]) out = PyTuple_Pack(4, cols[0], cols[1], cols[2], cols[3]);
    for (int k = 0; k < 4; k++) Py_XDECREF(cols[k]);
    return out;
}

/* marked_ancestor(parent, marked): per row the position of its nearest proper ancestor whose
 * mark is non-zero (-1: none), for rows in preorder (every parent before its children);
 * None when a column is not plain int64 without nulls or a parent does not come first. */
static PyObject *marked_ancestor(PyObject *module, PyObject *args) {
    (void)module;
    int64_t *parent, *mark, n;
    int got = read_int64_pair(args, &parent, &mark, &n);
    if (got <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    int64_t *near = int64_values(n);
    if (!near) {
        free(parent);
        free(mark);
        return PyErr_NoMemory();
    }
    int ordered = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n && ordered; i++) {
        int64_t up = parent[i];
        if (up >= i)
            ordered = 0;
        else
            near[i] = up < 0 ? -1 : mark[up] ? up : near[up];
    }
    Py_END_ALLOW_THREADS
    free(parent);
    free(mark);
    if (!ordered) {
        free(near);
        Py_RETURN_NONE;
    }
    return int64_column(near, n);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "scan(buffer, fields) -> (form, top, events_span, rows, columns, maybe_unsafe) | reason"},
    {"pick", pick, METH_VARARGS, "pick(buffer, starts, ends, fields) -> (columns, maybe_unsafe) | reason"},
    {"nest", nest, METH_VARARGS, "nest(track, end) -> (parent, depth, end, previous sibling) | None"},
    {"marked_ancestor", marked_ancestor, METH_VARARGS, "marked_ancestor(parent, marked) -> nearest | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_scan",
    .m_doc = "Native fast path of the trace decoder (strict JSON -> Arrow columns).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__scan(void) {
    init_plain();
    if (!C_NUMERIC && !open_c_locale()) { /* kept for the life of the process */
        PyErr_SetString(PyExc_ImportError, "cannot open the C numeric locale");
        return NULL;
    }
    if (PyType_Ready(&ColumnType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&ColumnType);
    if (PyModule_AddObject(m, "Column", (PyObject *)&ColumnType) < 0) {
        Py_DECREF(&ColumnType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
