/* Native fast path of the trace decoder: strict JSON in, Arrow tables out, one block at a time.
 *
 * Scanner(spec) reads a Chrome trace (a Kineto object or a bare event array) fed in blocks of
 * any size (feed(buffer, final)): it keeps no byte of the input, only what it made of it.
 * Each event is routed, by its phase and category, to the tables the spec names (one table
 * per group of events: complete events, their GPU args, flows, ...), each row keeping the
 * event's index in traceEvents as its id; the tables come out through the Arrow PyCapsule
 * interface (flush()), so polars takes the buffers without copying or creating a Python
 * object per value. Text is stored once per distinct value: a column of string views whose
 * equal values share their bytes, or a dictionary column (polars: Categorical).
 *
 * Block boundaries may fall anywhere: feed() consumes every complete unit (an event, a
 * top-level member) and says how many bytes it consumed; the caller passes the rest again
 * with the next block. Top-level keys before and after traceEvents are kept (their values as
 * JSON text). Each event's args object is copied, as written, into an args buffer the caller
 * takes after each block (take_args()), with its length per event (finish()).
 *
 * It is a *fast path* only: it accepts exactly the well-formed traces whose routed fields
 * have their usual JSON types, and answers anything else (broken JSON, invalid UTF-8, a bool
 * where a number belongs, an integer beyond 64 bits, a duplicate key, ...) with a one-line
 * reason and the offset of the event it could not read; the caller decodes that part with
 * msgspec (which knows every repair and coercion), tells the scanner how many events it
 * found there (skip_events()) and feeds the rest. probe() checks, without keeping anything,
 * that events can be read from an offset (to find where a damaged part ends).
 *
 * Two scanners read one file on two cores: a second one, told it starts inside traceEvents
 * after a comma (resume_events()), reads a later block from an event's start; the first, once
 * its own read ends exactly there, adopts it (adopt(other)): the other's rows are appended
 * with its ids moved on, its lanes and text values numbered as this scanner would have, its
 * args lengths appended. The tables are then those one scanner reading it all would give.
 *
 * spec: (slots, ph_slot, cat_slot, phases, cats, x_default, other_group, tables)
 *   slots: (json key: bytes, kind, in_args) per field read from an event. Kinds:
 *     0 STR   string or null            1 PH    string, absent = ""
 *     2 ID    integer or string / null  (integers as their decimal digits)
 *     3 FLOAT number or null            4 INT   integer or null
 *     5 RAW   any JSON value, as the exact text written
 *   phases: (ph: bytes, group) pairs; group -1: look the category up in cats, (cat, group)
 *     pairs, else x_default; a phase not listed is other_group.
 *   tables: (groups mask, sparse, lanes, columns) with columns (slot, groups mask, store): a
 *     table gets a row for each event whose group is in its mask (sparse: only when one of
 *     its columns has a value); a column holds the slot's value for rows of its groups (else
 *     null). store: 0 plain (text: string views), 1 dictionary (text only). lanes: each row
 *     also gets its event's lane, the number of its (pid, tid) pair (from the "pid" and "tid"
 *     ID fields), the same in every table.
 * Absent fields are null (PH: "").
 *
 * pick(buffer, starts, ends, fields) reads fields of the objects at the given byte spans
 * (args objects), one row each, without decoding every event again. Both parse without the
 * GIL. Per column, whether a value may hold a character that tracetui.safetext replaces
 * (escapes, DEL, C1 controls, bidi controls: a superset), so the caller cleans only those.
 *
 * Numbers are read the same in every locale (the C library's strtod follows LC_NUMERIC: a
 * decimal comma would stop it at the '.'); the parse never takes the GIL back, and it reads
 * only memory it owns or the caller's buffer, which the Py_buffer keeps alive (field keys
 * are copied in). A Scanner is used by one thread at a time (its calls hold a lock).
 *
 * nest(track, end) nests intervals already sorted by (track, start, end descending, ...) in
 * one stack pass, marked_ancestor(parent, marked) finds each row's nearest marked ancestor in
 * one preorder pass, and sum_at(index, values, size) adds values at positions: see their
 * comments. Not JSON, but the same column export.
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

/* An exported array owns its buffers (all freed on release) and its dictionary, if any. */
typedef struct {
    int n;
    void **owned;          /* n buffers, freed on release (NULL entries allowed) */
    const void **buffers;  /* what Arrow reads (may repeat owned ones, or be NULL) */
    struct ArrowArray *dictionary;
} Owned;

static void release_array(struct ArrowArray *array) {
    Owned *own = array->private_data;
    if (own) {
        for (int i = 0; i < own->n; i++) free(own->owned[i]);
        free(own->owned);
        free(own->buffers);
        if (own->dictionary) {
            if (own->dictionary->release) own->dictionary->release(own->dictionary);
            free(own->dictionary);
        }
        free(own);
    }
    array->release = NULL;
}

static void release_schema(struct ArrowSchema *schema) {
    if (schema->dictionary) {
        if (schema->dictionary->release) schema->dictionary->release(schema->dictionary);
        free(schema->dictionary);
        schema->dictionary = NULL;
    }
    schema->release = NULL;
}

/* A fresh array of `length` rows over n_buffers buffers (all NULL, owned list empty). */
static struct ArrowArray *new_array(int64_t length, int64_t null_count, int n_buffers) {
    struct ArrowArray *array = calloc(1, sizeof *array);
    Owned *own = calloc(1, sizeof *own);
    const void **buffers = calloc((size_t)n_buffers, sizeof(void *));
    void **owned = calloc((size_t)n_buffers, sizeof(void *));
    if (!array || !own || !buffers || !owned) {
        free(array), free(own), free(buffers), free(owned);
        return NULL;
    }
    own->n = n_buffers;
    own->owned = owned;
    own->buffers = buffers;
    array->length = length;
    array->null_count = null_count;
    array->n_buffers = n_buffers;
    array->buffers = buffers;
    array->release = release_array;
    array->private_data = own;
    return array;
}

/* Hand buffer i to the array (it frees it); `shown` is what Arrow reads there. */
static void give(struct ArrowArray *array, int i, void *owned, const void *shown) {
    Owned *own = array->private_data;
    own->owned[i] = owned;
    own->buffers[i] = shown;
}

/* ---- the Column type: one finished column, exported once as an Arrow array ---- */

typedef struct {
    PyObject_HEAD
    struct ArrowArray *array;
    const char *format; /* static strings */
    const char *dict_format;
    int64_t length;
} ColumnObject;

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

static PyObject *column_arrow_c_array(ColumnObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", names, &requested)) return NULL;
    if (!self->array) {
        PyErr_SetString(PyExc_RuntimeError, "column already exported");
        return NULL;
    }
    struct ArrowSchema *schema = calloc(1, sizeof *schema);
    struct ArrowSchema *dict = self->dict_format ? calloc(1, sizeof *dict) : NULL;
    if (!schema || (self->dict_format && !dict)) {
        free(schema);
        free(dict);
        return PyErr_NoMemory();
    }
    schema->format = self->format;
    schema->name = "";
    schema->flags = ARROW_FLAG_NULLABLE;
    schema->release = release_schema;
    if (dict) {
        dict->format = self->dict_format;
        dict->name = "";
        dict->release = release_schema;
        schema->dictionary = dict;
    }
    PyObject *sc = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
    if (!sc) {
        release_schema(schema);
        free(schema);
        return NULL;
    }
    PyObject *ac = PyCapsule_New(self->array, "arrow_array", array_capsule_free);
    if (!ac) {
        Py_DECREF(sc);
        return NULL;
    }
    self->array = NULL;
    PyObject *out = PyTuple_Pack(2, sc, ac);
    Py_DECREF(sc);
    Py_DECREF(ac);
    return out;
}

static Py_ssize_t column_len(ColumnObject *self) { return (Py_ssize_t)self->length; }

static void column_dealloc(ColumnObject *self) {
    if (self->array) {
        if (self->array->release) self->array->release(self->array);
        free(self->array);
    }
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

/* A Column object taking `array` (NULL: out of memory; the array is released on failure). */
static PyObject *column_of(struct ArrowArray *array, const char *format, const char *dict_format) {
    if (!array) return PyErr_NoMemory();
    ColumnObject *obj = PyObject_New(ColumnObject, &ColumnType);
    if (!obj) {
        array->release(array);
        free(array);
        return NULL;
    }
    obj->array = array;
    obj->format = format;
    obj->dict_format = dict_format;
    obj->length = array->length;
    return (PyObject *)obj;
}

/* A column of n int64 values without nulls (takes `values`). */
static PyObject *int64_column(int64_t *values, int64_t n) {
    struct ArrowArray *array = new_array(n, 0, 2);
    if (!array) {
        free(values);
        return PyErr_NoMemory();
    }
    give(array, 1, values, values);
    return column_of(array, "l", NULL);
}

/* ---- the scanner's state ---- */

enum { K_STR = 0, K_PH = 1, K_ID = 2, K_FLOAT = 3, K_INT = 4, K_RAW = 5, K_COUNT = 6 };
enum { ST_VIEW = 0, ST_DICT = 1 };
#define MAX_SLOTS 96
#define MAX_COLS 128
#define MAX_TABLES 16
#define MAX_NAMES 64
#define MAX_GROUPS 32
#define MAX_DEPTH 512
#define MAX_KEYLEN 64
#define BUFFER_LIMIT ((int64_t)1 << 30) /* a text buffer's bytes (views address them with int32) */

static int is_text(int kind) { return kind == K_STR || kind == K_PH || kind == K_ID || kind == K_RAW; }

typedef struct {
    uint64_t hash;
    uint32_t buf, off, len;
} Entry;

/* Distinct text values, each stored once in a list of data buffers. */
typedef struct {
    char **data;
    int64_t *used, *cap;
    int nbuf, capbuf;
    Entry *entries;
    uint32_t n, capn;
    uint32_t *table; /* open addressing: entry index + 1, 0 = empty */
    uint32_t mask;
} Strings;

typedef struct {
    int is_int; /* an integer literal that fits int64 */
    int64_t i;
    double d;
} Number;

/* One field of an event, staged while the event is read. */
typedef struct {
    char key[MAX_KEYLEN]; /* a copy: the caller's objects may change while the GIL is released */
    Py_ssize_t keylen;
    int in_args, kind;
    uint64_t stamp; /* the event (parse) that set it */
    int null, escaped, unsafe;
    uint64_t counted; /* the event whose cut (of this slot's value) was recorded */
    const char *a, *b; /* text: between the quotes; RAW: the value */
    Number num;
} Slot;

typedef struct {
    int slot, kind, store;
    uint32_t groups;
    uint8_t *validity;
    int64_t null_count;
    int maybe_unsafe;
    int64_t *values;  /* INT, FLOAT (as bits) */
    uint8_t *views;   /* text, ST_VIEW: 16 bytes a row */
    uint32_t *codes;  /* text, ST_DICT */
    Strings str;
} Col;

typedef struct {
    uint32_t groups;
    int sparse, c0, nc, with_lanes;
    uint32_t *ids;
    uint32_t *lanes; /* with_lanes: the event's (pid, tid) lane */
    int64_t rows, cap;
} Table;

typedef struct {
    char text[MAX_KEYLEN];
    Py_ssize_t len;
    int group;
} Name;

typedef struct {
    char *key, *value; /* value NULL: traceEvents itself */
    Py_ssize_t keylen, len;
} Top;

/* A value cut (text over max_text: kind 0) or an args object not kept (over max_args: 1). */
typedef struct {
    int64_t event, length;
    int kind;
} Cut;

/* The mark put after a cut value: prefix, the original length in decimal, suffix. */
typedef struct {
    char text[2][MAX_KEYLEN];
    Py_ssize_t len[2];
} Mark;

enum { D_START, D_OBJ_FIRST, D_OBJ_KEY, D_OBJ_NEXT, D_EV_FIRST, D_EV, D_EV_NEXT, D_END };
enum { R_MORE = 0, R_DONE = 1, R_EVENT = 2, R_DOCUMENT = 3, R_TRUNCATED = 4 };

typedef struct {
    const char *base, *p, *end;
    const char *why;  /* reason for refusing, NULL while fine */
    int short_input;  /* the refusal is the input running out */
    int unsafe;       /* set by skip_string on text that may need cleaning */
    int dry;          /* probing: read, keep nothing */
    int oom;          /* out of memory: stop */
    uint64_t stamp;
    Slot slots[MAX_SLOTS];
    int nslots, ph_slot, cat_slot;
    signed char by_len[2][MAX_KEYLEN][MAX_SLOTS + 1]; /* slots by key length, per level */
    Col cols[MAX_COLS];
    int ncols;
    Table tables[MAX_TABLES];
    int ntables;
    Name phases[MAX_NAMES], cats[MAX_NAMES];
    int nphases, ncats, x_default, other_group;
    int64_t events; /* events so far: the next event's id */
    int64_t trailing_commas; /* a comma before the array's closing bracket (accepted, counted) */
    int state, form, found_events;
    Top *top;
    Py_ssize_t ntop, captop;
    char *args; /* raw args of the events since the last take_args() */
    size_t nargs, capargs;
    uint32_t *arglen; /* per event */
    int64_t caparglen;
    char *scratch; /* escaped text, decoded */
    size_t capscratch;
    int pid_slot, tid_slot;  /* -1: no lanes */
    Strings lane_keys;       /* distinct (pid, tid) pairs: entry index = lane */
    char *lane_key;          /* the pair being looked up */
    size_t caplane;
    int64_t lane_stamp;      /* the event whose lane is in s->lane */
    uint32_t lane;
    const char *args_a, *args_b; /* the current event's args object */
    int resumed;                 /* reads from the middle of traceEvents (resume_events) */
    int64_t max_text, max_args;  /* longer text values are cut, longer args objects not kept (0: any) */
    Mark text_mark, args_mark;   /* what replaces a cut value's end / an args object not kept */
    int64_t cut_from;            /* set by slot_text: the length of the value it cut (0: none) */
    Cut *cuts;                   /* the values cut and args not kept, in event order */
    int64_t ncuts, capcuts;
    int spent;                   /* flushed, finished, given lanes or events, or adopted: not adoptable */
} Scan;

static int fail(Scan *s, const char *why) {
    if (!s->why) s->why = why;
    if (why[0] == 'o' && strcmp(why, "out of memory") == 0) s->oom = 1;
    return -1;
}

/* The input ended inside a unit: with more data it may be fine. */
static int short_input(Scan *s) {
    if (!s->why) {
        s->why = "truncated";
        s->short_input = 1;
    }
    return -1;
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

/* Length of the valid UTF-8 sequence starting at p (a byte >= 0x80); 0 if invalid; -1 if
 * it may be valid but the input ends first. */
static inline int utf8_len(const unsigned char *p, const unsigned char *e) {
    unsigned char b = p[0];
    int n = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (!n) return 0;
    for (int i = 1; i < n; i++) {
        if (p + i >= e) return -1;
        if ((p[i] & 0xC0) != 0x80) return 0;
        if (i == 1) {
            if (b == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
            if (b == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
            if (b == 0xF0 && p[1] < 0x90) return 0;  /* overlong */
            if (b == 0xF4 && p[1] >= 0x90) return 0; /* > U+10FFFF */
        }
    }
    return n;
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
        if (p >= e) return short_input(s);
        unsigned char ch = *p;
        if (ch == '"') break;
        if (ch == '\\') {
            esc = 1;
            if (p + 1 >= e) return short_input(s);
            unsigned char x = p[1];
            if (x == 'u') {
                unsigned v;
                if (e - p < 6) return short_input(s);
                if (hex4((const char *)p + 2, &v) < 0) return fail(s, "bad \\u escape");
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
            if (n < 0) return short_input(s);
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

/* The code point of the \u escape whose hex digits start at *pp (a surrogate pair read whole, up to
 * b), *pp moved past it; -1 (with s->why) on a bad or unpaired escape. */
static int code_point(Scan *s, const char **pp, const char *b, unsigned *out) {
    const char *p = *pp;
    unsigned cp, lo;
    if (hex4(p, &cp) < 0) return fail(s, "bad \\u escape"); /* skip_string checked it */
    p += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (b - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
            return fail(s, "unpaired surrogate escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        p += 6;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return fail(s, "unpaired surrogate escape");
    }
    *pp = p;
    *out = cp;
    return 0;
}

/* Decode the validated string text [a, b) into out (never longer); returns the decoded length
 * or -1 (with s->why) on an unpaired surrogate escape. Past `room` decoded bytes the rest is
 * only counted (a long value is cut): out needs room + 4 bytes (an escape may end past it). */
static Py_ssize_t unescape(Scan *s, const char *a, const char *b, char *out, size_t room) {
    char *o = out, *stop = out + room;
    const char *p = a;
    Py_ssize_t beyond = 0; /* decoded bytes past the room, counted only */
    while (p < b) {
        if (o >= stop) {
            char tmp[4], *t = tmp;
            if (*p != '\\') {
                beyond++, p++;
                continue;
            }
            if (p[1] != 'u') {
                beyond++, p += 2;
                continue;
            }
            unsigned cp;
            p += 2;
            if (code_point(s, &p, b, &cp) < 0) return -1;
            put_utf8(&t, cp);
            beyond += t - tmp;
            continue;
        }
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
            unsigned cp;
            if (code_point(s, &p, b, &cp) < 0) return -1;
            put_utf8(&o, cp);
            break;
        }
        default: *o++ = x; /* " \ / */
        }
    }
    return (o - out) + beyond;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Parse a JSON number at s->p (strict grammar). Values that are not finite doubles, and
 * integer literals beyond int64, are refused. With out == NULL only the grammar is checked:
 * big or odd numbers are fine where nobody reads them. A number that reaches the end of the
 * input is read; the unit it belongs to is complete only once its closer is seen. */
static int read_number(Scan *s, Number *out) {
    const char *p = s->p, *e = s->end, *start = p;
    int neg = 0;
    if (p < e && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= e) return short_input(s);
    if (*p < '0' || *p > '9') return fail(s, "bad number");
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
        if (p >= e) return short_input(s);
        if (*p < '0' || *p > '9') return fail(s, "bad number");
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
        if (p >= e) return short_input(s);
        if (*p < '0' || *p > '9') return fail(s, "bad number");
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
    if (s->p >= s->end) return short_input(s);
    if (*s->p != '"') return fail(s, "expected a key");
    if (skip_string(s, a, b, esc) < 0) return -1;
    skip_ws(s);
    if (s->p >= s->end) return short_input(s);
    if (*s->p != ':') return fail(s, "expected ':'");
    s->p++;
    skip_ws(s);
    return 0;
}

/* After a member or an element: 1 when a ',' announces another, 0 at the closer, -1 else. */
static int next_or_close(Scan *s, char close) {
    skip_ws(s);
    if (s->p >= s->end) return short_input(s);
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

/* The literal `word` at s->p (short: the input ends inside a prefix of it). */
static int skip_literal(Scan *s, const char *word, size_t n) {
    size_t have = (size_t)(s->end - s->p);
    if (have < n) return memcmp(s->p, word, have) == 0 ? short_input(s) : fail(s, "invalid JSON");
    if (memcmp(s->p, word, n) != 0) return fail(s, "invalid JSON");
    s->p += n;
    return 0;
}

static int skip_value(Scan *s, int depth) {
    if (depth > MAX_DEPTH) return fail(s, "nested too deep");
    skip_ws(s);
    if (s->p >= s->end) return short_input(s);
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

/* ---- distinct text values ---- */

static inline uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static void free_strings(Strings *t) {
    for (int i = 0; i < t->nbuf; i++) free(t->data[i]);
    free(t->data);
    free(t->used);
    free(t->cap);
    free(t->entries);
    free(t->table);
    memset(t, 0, sizeof *t);
}

static int rehash(Strings *t, uint32_t slots) {
    uint32_t *table = calloc(slots, sizeof(uint32_t));
    if (!table) return -1;
    uint32_t mask = slots - 1;
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t i = (uint32_t)t->entries[k].hash & mask;
        while (table[i]) i = (i + 1) & mask;
        table[i] = k + 1;
    }
    free(t->table);
    t->table = table;
    t->mask = mask;
    return 0;
}

/* Room for n more bytes in the last data buffer (a new buffer past BUFFER_LIMIT). */
static int text_room(Strings *t, int64_t n) {
    int last = t->nbuf - 1;
    if (last >= 0 && t->used[last] + n <= t->cap[last]) return 0;
    if (last >= 0 && t->used[last] + n <= BUFFER_LIMIT) {
        int64_t cap = t->cap[last];
        while (cap < t->used[last] + n) cap *= 2;
        if (cap > BUFFER_LIMIT) cap = BUFFER_LIMIT;
        char *x = realloc(t->data[last], (size_t)cap);
        if (!x) return -1;
        t->data[last] = x;
        t->cap[last] = cap;
        return 0;
    }
    if (t->nbuf == t->capbuf) {
        int capbuf = t->capbuf ? t->capbuf * 2 : 4;
        char **data = realloc(t->data, (size_t)capbuf * sizeof(char *));
        if (!data) return -1;
        t->data = data;
        int64_t *used = realloc(t->used, (size_t)capbuf * sizeof(int64_t));
        if (!used) return -1;
        t->used = used;
        int64_t *cap = realloc(t->cap, (size_t)capbuf * sizeof(int64_t));
        if (!cap) return -1;
        t->cap = cap;
        t->capbuf = capbuf;
    }
    int64_t cap = n > (1 << 16) ? n : (1 << 16);
    char *x = malloc((size_t)cap);
    if (!x) return -1;
    t->data[t->nbuf] = x;
    t->used[t->nbuf] = 0;
    t->cap[t->nbuf] = cap;
    t->nbuf++;
    return 0;
}

/* The entry of the text [p, p + n), added if new; -1 when out of memory. */
static int64_t intern(Strings *t, const char *p, uint32_t n) {
    if (!t->table && rehash(t, 1024) < 0) return -1;
    uint64_t h = hash_bytes(p, n);
    uint32_t i = (uint32_t)h & t->mask;
    while (t->table[i]) {
        Entry *e = &t->entries[t->table[i] - 1];
        if (e->hash == h && e->len == n && memcmp(t->data[e->buf] + e->off, p, n) == 0) return t->table[i] - 1;
        i = (i + 1) & t->mask;
    }
    if (n > BUFFER_LIMIT || t->n == UINT32_MAX - 1 || text_room(t, n) < 0) return -1;
    if (t->n == t->capn) {
        uint32_t capn = t->capn ? t->capn * 2 : 256;
        Entry *x = realloc(t->entries, (size_t)capn * sizeof(Entry));
        if (!x) return -1;
        t->entries = x;
        t->capn = capn;
    }
    int last = t->nbuf - 1;
    Entry *e = &t->entries[t->n];
    *e = (Entry){h, (uint32_t)last, (uint32_t)t->used[last], n};
    memcpy(t->data[last] + t->used[last], p, n);
    t->used[last] += n;
    t->table[i] = ++t->n;
    if ((uint64_t)t->n * 2 > (uint64_t)t->mask + 1 && rehash(t, (t->mask + 1) * 2) < 0) return -1;
    return t->n - 1;
}

/* The 16-byte string view of an entry, or of short text inline. */
static inline void put_view(uint8_t *v, const Strings *t, int64_t entry, const char *p, uint32_t n) {
    memset(v, 0, 16);
    memcpy(v, &n, 4);
    if (entry < 0) {
        memcpy(v + 4, p, n); /* n <= 12 */
        return;
    }
    const Entry *e = &t->entries[entry];
    memcpy(v + 4, t->data[e->buf] + e->off, 4);
    memcpy(v + 8, &e->buf, 4);
    memcpy(v + 12, &e->off, 4);
}

/* ---- tables ---- */

static inline void set_valid(uint8_t *validity, int64_t row) { validity[row >> 3] |= (uint8_t)(1u << (row & 7)); }

/* Room for exactly `cap` rows in every buffer of a table: more as it grows (new validity
 * bytes cleared), or its rows only when it is exported. */
static int resize_table(Scan *s, Table *t, int64_t cap) {
    uint32_t *ids = realloc(t->ids, (size_t)cap * sizeof(uint32_t));
    if (!ids) return fail(s, "out of memory");
    t->ids = ids;
    if (t->with_lanes) {
        uint32_t *lanes = realloc(t->lanes, (size_t)cap * sizeof(uint32_t));
        if (!lanes) return fail(s, "out of memory");
        t->lanes = lanes;
    }
    int64_t had = (t->cap + 7) / 8, bytes = (cap + 7) / 8;
    for (int k = t->c0; k < t->c0 + t->nc; k++) {
        Col *c = &s->cols[k];
        uint8_t *v = realloc(c->validity, (size_t)bytes);
        if (!v) return fail(s, "out of memory");
        if (bytes > had) memset(v + had, 0, (size_t)(bytes - had));
        c->validity = v;
        if (!is_text(c->kind)) {
            int64_t *x = realloc(c->values, (size_t)cap * sizeof(int64_t));
            if (!x) return fail(s, "out of memory");
            c->values = x;
        } else if (c->store == ST_DICT) {
            uint32_t *x = realloc(c->codes, (size_t)cap * sizeof(uint32_t));
            if (!x) return fail(s, "out of memory");
            c->codes = x;
        } else {
            uint8_t *x = realloc(c->views, (size_t)cap * 16);
            if (!x) return fail(s, "out of memory");
            c->views = x;
        }
    }
    t->cap = cap;
    return 0;
}

/* Room for `need` rows in a table, its room doubled as often as it takes. */
static int grow_table(Scan *s, Table *t, int64_t need) {
    int64_t cap = t->cap ? t->cap : 1 << 14;
    while (cap < need) cap *= 2;
    return cap == t->cap ? 0 : resize_table(s, t, cap);
}

static int scratch_room(Scan *s, size_t need) {
    if (need <= s->capscratch) return 0;
    char *x = realloc(s->scratch, need);
    if (!x) return fail(s, "out of memory");
    s->scratch = x;
    s->capscratch = need;
    return 0;
}

/* Write `mark`'s prefix, the number, its suffix at out; returns the length. */
static Py_ssize_t put_mark(char *out, const Mark *mark, int64_t number) {
    char digits[24];
    int k = snprintf(digits, sizeof digits, "%lld", (long long)number);
    memcpy(out, mark->text[0], (size_t)mark->len[0]);
    memcpy(out + mark->len[0], digits, (size_t)k);
    memcpy(out + mark->len[0] + k, mark->text[1], (size_t)mark->len[1]);
    return mark->len[0] + k + mark->len[1];
}

/* The decoded text `full` bytes long at src (its first max_text + 1 bytes there at least) cut:
 * its first max_text bytes at most, ending on a character's end, then the text mark, in the
 * scratch. s->cut_from says it was cut. */
static int cut_text(Scan *s, const char *src, int64_t full, const char **p, Py_ssize_t *n) {
    int64_t k = s->max_text;
    while (k > 0 && ((unsigned char)src[k] & 0xC0) == 0x80) k--;
    int in_scratch = src == s->scratch; /* escaped: decoded there (the room may move it) */
    if (scratch_room(s, (size_t)k + 2 * MAX_KEYLEN + 24) < 0) return -1;
    if (!in_scratch) memcpy(s->scratch, src, (size_t)k);
    *n = k + put_mark(s->scratch + k, &s->text_mark, full);
    *p = s->scratch;
    s->cut_from = full;
    return 0;
}

/* Note a cut value or an args object not kept, of event `event`. */
static int add_cut(Scan *s, int64_t event, int kind, int64_t length) {
    if (s->ncuts == s->capcuts) {
        int64_t cap = s->capcuts ? 2 * s->capcuts : 16;
        Cut *x = realloc(s->cuts, (size_t)cap * sizeof(Cut));
        if (!x) return fail(s, "out of memory");
        s->cuts = x;
        s->capcuts = cap;
    }
    s->cuts[s->ncuts++] = (Cut){event, length, kind};
    return 0;
}

/* The decoded text of a staged text slot: in the input, or in the scratch (escaped, or cut:
 * over max_text), or for an ID given as a number in `digits`. -1 with s->why on failure. */
static int slot_text(Scan *s, Slot *sl, const char **p, Py_ssize_t *n, char *digits) {
    if (sl->kind == K_RAW || !sl->escaped) {
        if (sl->kind == K_ID && !sl->a) { /* a number */
            uint64_t u = sl->num.i < 0 ? 0 - (uint64_t)sl->num.i : (uint64_t)sl->num.i;
            char tmp[24];
            int k = 0, len = 0;
            do {
                tmp[k++] = (char)('0' + u % 10);
                u /= 10;
            } while (u);
            if (sl->num.i < 0) digits[len++] = '-';
            while (k) digits[len++] = tmp[--k];
            *p = digits;
            *n = len;
            return 0;
        }
        *p = sl->a;
        *n = sl->b - sl->a;
        return s->max_text && *n > s->max_text ? cut_text(s, *p, *n, p, n) : 0;
    }
    size_t raw = (size_t)(sl->b - sl->a), room = raw;
    if (s->max_text && raw > (size_t)s->max_text) room = (size_t)s->max_text + 1; /* what a cut keeps */
    if (scratch_room(s, room + 4) < 0) return -1;
    Py_ssize_t len = unescape(s, sl->a, sl->b, s->scratch, room);
    if (len < 0) return -1;
    if (s->max_text && len > s->max_text) return cut_text(s, s->scratch, len, p, n);
    *p = s->scratch;
    *n = len;
    return 0;
}

static int put_text(Scan *s, Col *c, int64_t row, const char *p, Py_ssize_t n) {
    if (n > BUFFER_LIMIT) return fail(s, "a text value over 1 GiB");
    if (c->store == ST_DICT) {
        int64_t e = intern(&c->str, p, (uint32_t)n);
        if (e < 0) return fail(s, "out of memory");
        c->codes[row] = (uint32_t)e;
    } else {
        int64_t e = -1;
        if (n > 12 && (e = intern(&c->str, p, (uint32_t)n)) < 0) return fail(s, "out of memory");
        put_view(c->views + 16 * row, &c->str, e, p, (uint32_t)n);
    }
    return 0;
}

/* Row `row` of column c: the value of its slot, or null. */
static int put_value(Scan *s, Col *c, int64_t row, int present) {
    Slot *sl = &s->slots[c->slot];
    if (!present || sl->null) {
        if (c->kind == K_PH) { /* absent phase: "" */
            set_valid(c->validity, row);
            return put_text(s, c, row, "", 0);
        }
        c->null_count++;
        if (c->values) c->values[row] = 0;
        else if (c->codes) c->codes[row] = 0;
        else if (c->views) memset(c->views + 16 * row, 0, 16);
        return 0;
    }
    set_valid(c->validity, row);
    if (sl->unsafe) c->maybe_unsafe = 1;
    if (c->kind == K_FLOAT) {
        memcpy(&c->values[row], &sl->num.d, sizeof(double));
        return 0;
    }
    if (c->kind == K_INT) {
        c->values[row] = sl->num.i;
        return 0;
    }
    const char *p;
    Py_ssize_t n;
    char digits[24];
    s->cut_from = 0;
    if (slot_text(s, sl, &p, &n, digits) < 0) return -1;
    if (s->cut_from && sl->counted != s->stamp) { /* counted once per value */
        sl->counted = s->stamp;
        if (add_cut(s, s->events, 0, s->cut_from) < 0) return -1;
    }
    return put_text(s, c, row, p, n);
}

/* Whether slot sl holds a value for the event being read. */
static inline int staged(Scan *s, Slot *sl) { return sl->stamp == s->stamp; }

static int text_is(Scan *s, int slot, const Name *names, int count, int *group) {
    Slot *sl = &s->slots[slot];
    const char *p = "";
    Py_ssize_t n = 0;
    char digits[24];
    if (staged(s, sl) && !sl->null && slot_text(s, sl, &p, &n, digits) < 0) return -1;
    for (int i = 0; i < count; i++)
        if (names[i].len == n && memcmp(names[i].text, p, (size_t)n) == 0) {
            *group = names[i].group;
            return 1;
        }
    return 0;
}

/* The group of the event just read, from its phase and category. */
static int event_group(Scan *s, int *group) {
    int found = text_is(s, s->ph_slot, s->phases, s->nphases, group);
    if (found < 0) return -1;
    if (!found) {
        *group = s->other_group;
        return 0;
    }
    if (*group >= 0) return 0;
    Slot *cat = &s->slots[s->cat_slot];
    if (!staged(s, cat) || cat->null) {
        *group = s->x_default;
        return 0;
    }
    found = text_is(s, s->cat_slot, s->cats, s->ncats, group);
    if (found < 0) return -1;
    if (!found) *group = s->x_default;
    return 0;
}

/* Append text (NULL: null) to the lane key at *at: a null flag, the length, the bytes. */
static int lane_part(Scan *s, size_t *at, const char *p, Py_ssize_t n) {
    size_t need = *at + 5 + (size_t)(p ? n : 0);
    if (need > s->caplane) {
        size_t cap = s->caplane ? s->caplane : 64;
        while (cap < need) cap *= 2;
        char *x = realloc(s->lane_key, cap);
        if (!x) return fail(s, "out of memory");
        s->lane_key = x;
        s->caplane = cap;
    }
    uint32_t len = p ? (uint32_t)n : 0;
    s->lane_key[*at] = p ? 1 : 0;
    memcpy(s->lane_key + *at + 1, &len, 4);
    if (p) memcpy(s->lane_key + *at + 5, p, (size_t)n);
    *at = need;
    return 0;
}

/* The lane of a (pid, tid) pair given as text (NULL: null), added if new. */
static int64_t lane_of(Scan *s, const char *pid, Py_ssize_t npid, const char *tid, Py_ssize_t ntid) {
    size_t at = 0;
    if (lane_part(s, &at, pid, npid) < 0 || lane_part(s, &at, tid, ntid) < 0) return -1;
    if (at > BUFFER_LIMIT) return fail(s, "a pid or tid over 1 GiB");
    int64_t lane = intern(&s->lane_keys, s->lane_key, (uint32_t)at);
    if (lane < 0) return fail(s, "out of memory");
    return lane;
}

/* The lane of the event just read (its pid and tid as the ID columns store them). */
static int event_lane(Scan *s) {
    if (s->lane_stamp == (int64_t)s->stamp) return 0;
    const char *p[2] = {NULL, NULL};
    Py_ssize_t n[2] = {0, 0};
    char digits[2][24];
    int slots[2] = {s->pid_slot, s->tid_slot};
    char *copy = NULL;
    for (int k = 0; k < 2; k++) {
        Slot *sl = &s->slots[slots[k]];
        if (!staged(s, sl) || sl->null) continue;
        if (slot_text(s, sl, &p[k], &n[k], digits[k]) < 0) return -1;
        if (k == 0 && p[0] == s->scratch) { /* the tid may reuse the scratch */
            copy = malloc((size_t)n[0] + 1);
            if (!copy) return fail(s, "out of memory");
            memcpy(copy, p[0], (size_t)n[0]);
            p[0] = copy;
        }
    }
    int64_t lane = lane_of(s, p[0], n[0], p[1], n[1]);
    free(copy);
    if (lane < 0) return -1;
    s->lane = (uint32_t)lane;
    s->lane_stamp = (int64_t)s->stamp;
    return 0;
}

/* Append the event just read to the tables of its group, and keep its raw args. */
static int keep_event(Scan *s) {
    int group;
    if (event_group(s, &group) < 0) return -1;
    uint32_t bit = 1u << group;
    for (int k = 0; k < s->ntables; k++) {
        Table *t = &s->tables[k];
        if (!(t->groups & bit)) continue;
        if (t->sparse) {
            int any = 0;
            for (int i = t->c0; i < t->c0 + t->nc && !any; i++)
                any = (s->cols[i].groups & bit) && staged(s, &s->slots[s->cols[i].slot]) &&
                      !s->slots[s->cols[i].slot].null;
            if (!any) continue;
        }
        if (t->rows == t->cap && grow_table(s, t, t->rows + 1) < 0) return -1;
        int64_t row = t->rows;
        t->ids[row] = (uint32_t)s->events;
        if (t->with_lanes) {
            if (event_lane(s) < 0) return -1;
            t->lanes[row] = s->lane;
        }
        for (int i = t->c0; i < t->c0 + t->nc; i++) {
            Col *c = &s->cols[i];
            if (put_value(s, c, row, (c->groups & bit) && staged(s, &s->slots[c->slot])) < 0) return -1;
        }
        t->rows++;
    }
    return 0;
}

/* Room for `need` events' args lengths, doubled as often as it takes. */
static int arglen_room(Scan *s, int64_t need) {
    int64_t cap = s->caparglen ? s->caparglen : 1 << 14;
    while (cap < need) cap *= 2;
    if (cap == s->caparglen) return 0;
    uint32_t *x = realloc(s->arglen, (size_t)cap * sizeof(uint32_t));
    if (!x) return fail(s, "out of memory");
    s->arglen = x;
    s->caparglen = cap;
    return 0;
}

/* Record the raw args (NULL: none) of the next event; it becomes event number s->events. */
static int keep_args(Scan *s, const char *a, size_t n) {
    if (s->events >= (int64_t)UINT32_MAX) return fail(s, "more than 4 billion events");
    if (s->events == s->caparglen && arglen_room(s, s->events + 1) < 0) return -1;
    if (n > UINT32_MAX) return fail(s, "an args object over 4 GiB");
    if (n && s->nargs + n > s->capargs) {
        size_t cap = s->capargs ? s->capargs : 1 << 20;
        while (cap < s->nargs + n) cap *= 2;
        char *x = realloc(s->args, cap);
        if (!x) return fail(s, "out of memory");
        s->args = x;
        s->capargs = cap;
    }
    if (n) memcpy(s->args + s->nargs, a, n);
    s->nargs += n;
    s->arglen[s->events] = (uint32_t)n;
    return 0;
}

/* ---- reading events ---- */

static int is_null_at(Scan *s) { return skip_literal(s, "null", 4); }

/* Stage the value at s->p for slot sl (checked against its kind). */
static int stage_value(Scan *s, Slot *sl) {
    if (sl->stamp == s->stamp) return fail(s, "duplicate key");
    sl->stamp = s->stamp;
    sl->null = sl->escaped = sl->unsafe = 0;
    sl->a = sl->b = NULL;
    s->unsafe = 0;
    skip_ws(s);
    if (s->p >= s->end) return short_input(s);
    char ch = *s->p;
    if (sl->kind == K_RAW) {
        sl->a = s->p;
        if (skip_value(s, 1) < 0) return -1;
        sl->b = s->p;
        sl->unsafe = s->unsafe;
        return 0;
    }
    if (ch == 'n') {
        if (is_null_at(s) < 0) return -1;
        if (sl->kind == K_PH) return fail(s, "null phase");
        sl->null = 1;
        return 0;
    }
    if (ch == '"') {
        if (!is_text(sl->kind)) return fail(s, "a string where a number belongs");
        if (skip_string(s, &sl->a, &sl->b, &sl->escaped) < 0) return -1;
        sl->unsafe = s->unsafe;
        if (sl->escaped) { /* check its escapes now: keeping the event must not fail */
            const char *p;
            Py_ssize_t n;
            char digits[24];
            if (slot_text(s, sl, &p, &n, digits) < 0) return -1;
        }
        return 0;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        if (sl->kind == K_STR || sl->kind == K_PH) return fail(s, "a number where a string belongs");
        if (read_number(s, &sl->num) < 0) return -1;
        if (sl->kind != K_FLOAT && !sl->num.is_int) return fail(s, "a fraction where an integer belongs");
        return 0;
    }
    return fail(s, "an unexpected value type");
}

/* The slot for key [a, b) at level `where`, or NULL. */
static inline Slot *find_slot(Scan *s, const char *a, const char *b, int where) {
    Py_ssize_t n = b - a;
    if (n >= MAX_KEYLEN) return NULL;
    for (const signed char *i = s->by_len[where][n]; *i >= 0; i++) {
        Slot *sl = &s->slots[*i];
        if (sl->key[0] == a[0] && memcmp(sl->key, a, (size_t)n) == 0) return sl;
    }
    return NULL;
}

/* An object's members: known keys are staged, "args" (at event level) recurses and its
 * span is kept in s->args_a / s->args_b. */
static int read_object(Scan *s, int where) {
    int seen_args = 0, more = !open_container(s, '}');
    while (more > 0) {
        const char *a, *b;
        int esc;
        if (read_key(s, &a, &b, &esc) < 0) return -1;
        if (esc) return fail(s, "escaped key");
        if (!where && b - a == 4 && memcmp(a, "args", 4) == 0) {
            if (seen_args++) return fail(s, "duplicate key");
            if (s->p >= s->end) return short_input(s);
            if (*s->p != '{') return fail(s, "args is not an object");
            const char *start = s->p;
            if (read_object(s, 1) < 0) return -1;
            s->args_a = start;
            s->args_b = s->p;
        } else {
            Slot *sl = find_slot(s, a, b, where);
            if (sl ? stage_value(s, sl) : skip_value(s, 1)) return -1;
        }
        more = next_or_close(s, '}');
    }
    return more;
}

/* Read one event at s->p (on its '{'); keep it unless probing. */
static int read_event(Scan *s) {
    s->stamp++;
    s->args_a = s->args_b = NULL;
    if (read_object(s, 0) < 0) return -1;
    int group;
    if (s->dry) return event_group(s, &group);
    int64_t cuts = s->ncuts;
    size_t n = s->args_a ? (size_t)(s->args_b - s->args_a) : 0;
    int rc = keep_event(s);
    if (rc == 0 && s->max_args && n > (size_t)s->max_args) { /* a note in its place */
        char note[2 * MAX_KEYLEN + 24];
        rc = add_cut(s, s->events, 1, (int64_t)n);
        if (rc == 0) rc = keep_args(s, note, (size_t)put_mark(note, &s->args_mark, (int64_t)n));
    } else if (rc == 0) {
        rc = keep_args(s, s->args_a, n);
    }
    if (rc < 0) {
        s->ncuts = cuts; /* the event is read again (or the read stops): not counted */
        return -1;
    }
    s->events++;
    return 0;
}

static int add_top(Scan *s, const char *key, Py_ssize_t keylen, const char *value, Py_ssize_t len) {
    if (s->ntop == s->captop) {
        Py_ssize_t cap = s->captop ? s->captop * 2 : 16;
        Top *t = realloc(s->top, (size_t)cap * sizeof *t);
        if (!t) return fail(s, "out of memory");
        s->top = t;
        s->captop = cap;
    }
    Top *t = &s->top[s->ntop];
    t->key = malloc((size_t)keylen + 1);
    t->value = value ? malloc((size_t)len + 1) : NULL;
    if (!t->key || (value && !t->value)) {
        free(t->key);
        free(t->value);
        return fail(s, "out of memory");
    }
    memcpy(t->key, key, (size_t)keylen);
    if (value) memcpy(t->value, value, (size_t)len);
    t->keylen = keylen;
    t->len = len;
    s->ntop++;
    return 0;
}

/* ---- the document, block by block ---- */

/* The state after the events array closes. */
static int after_events(Scan *s) { return s->form ? D_END : D_OBJ_NEXT; }

/* Read from s->p to s->end. Returns R_MORE (everything complete was read: s->p is where the
 * next call starts), R_DONE, R_EVENT (an event could not be read: s->p is its start),
 * R_DOCUMENT (something else could not be read) or R_TRUNCATED (final, the input ended
 * inside the document: s->p is after the last complete unit). */
static int run(Scan *s, int final, int64_t probe_events) {
    for (;;) {
        const char *mark = s->p;
        s->why = NULL;
        s->short_input = 0;
        skip_ws(s);
        int at_end = s->p >= s->end;
        if (at_end && s->state != D_END) /* whitespace between units is consumed */
            return final ? R_TRUNCATED : R_MORE;
        int rc = 0;
        switch (s->state) {
        case D_START:
            if (*s->p == '{') {
                s->form = 0;
                s->p++;
                s->state = D_OBJ_FIRST;
            } else if (*s->p == '[') {
                s->form = 1;
                s->p++;
                s->state = D_EV_FIRST;
            } else {
                rc = fail(s, "not a JSON object or array");
            }
            break;
        case D_OBJ_FIRST:
            if (*s->p == '}') {
                s->p++;
                s->state = D_END;
            } else {
                s->state = D_OBJ_KEY;
            }
            break;
        case D_OBJ_KEY: {
            const char *a, *b;
            int esc;
            if ((rc = read_key(s, &a, &b, &esc)) < 0) break;
            if (esc) {
                rc = fail(s, "escaped key");
                break;
            }
            if (b - a == 11 && memcmp(a, "traceEvents", 11) == 0) {
                if (s->found_events) {
                    rc = fail(s, "duplicate traceEvents");
                    break;
                }
                if (s->p >= s->end) {
                    rc = short_input(s);
                    break;
                }
                if (*s->p != '[') {
                    rc = fail(s, "traceEvents is not an array");
                    break;
                }
                if (!s->dry && (rc = add_top(s, a, b - a, NULL, 0)) < 0) break;
                s->found_events = 1;
                s->p++;
                s->state = D_EV_FIRST;
            } else {
                const char *va = s->p;
                if ((rc = skip_value(s, 1)) < 0) break;
                const char *vb = s->p;
                skip_ws(s);
                if (s->p >= s->end) { /* a number may go on: wait for its delimiter */
                    rc = short_input(s);
                    break;
                }
                if (!s->dry && (rc = add_top(s, a, b - a, va, vb - va)) < 0) break;
                s->state = D_OBJ_NEXT;
            }
            break;
        }
        case D_OBJ_NEXT:
            if (*s->p == ',') {
                s->p++;
                s->state = D_OBJ_KEY;
            } else if (*s->p == '}') {
                s->p++;
                s->state = D_END;
            } else {
                rc = fail(s, "expected ',' or '}'");
            }
            break;
        case D_EV_FIRST:
            if (*s->p == ']') {
                s->p++;
                s->state = after_events(s);
            } else {
                s->state = D_EV;
            }
            break;
        case D_EV:
            if (*s->p == ']') { /* after a trailing comma */
                if (!s->dry) s->trailing_commas++;
                s->p++;
                s->state = after_events(s);
                break;
            }
            if (*s->p != '{') {
                rc = fail(s, "an event that is not an object");
                break;
            }
            if (probe_events == 0) return R_DONE;
            if ((rc = read_event(s)) < 0) break;
            if (probe_events > 0) probe_events--;
            s->state = D_EV_NEXT;
            break;
        case D_EV_NEXT:
            if (*s->p == ',') {
                s->p++;
                s->state = D_EV;
            } else if (*s->p == ']') {
                s->p++;
                s->state = after_events(s);
            } else {
                rc = fail(s, "expected ',' or ']'");
            }
            break;
        case D_END:
            if (!at_end) {
                rc = fail(s, "trailing data");
                break;
            }
            if (!final) return R_MORE;
            if (!s->form && !s->found_events) {
                rc = fail(s, "no traceEvents");
                break;
            }
            return R_DONE;
        }
        if (rc < 0) {
            int in_events = s->state == D_EV || s->state == D_EV_NEXT;
            if (s->short_input && !final) {
                s->p = mark;
                return R_MORE;
            }
            if (s->short_input) {
                s->p = mark;
                return R_TRUNCATED;
            }
            if (s->oom) return R_DOCUMENT;
            s->p = mark;
            if (in_events) {
                skip_ws(s); /* the damaged part starts here */
                return R_EVENT;
            }
            return R_DOCUMENT;
        }
    }
}

/* ---- export ---- */

static void reset_strings_index(Strings *t) {
    free(t->entries);
    free(t->table);
    free(t->used);
    free(t->cap);
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* The data buffers of t given to `array` from buffer index `first` on, then the sizes. */
static int give_text_buffers(struct ArrowArray *array, int first, Strings *t) {
    int64_t *sizes = malloc((size_t)(t->nbuf ? t->nbuf : 1) * sizeof(int64_t));
    if (!sizes) return -1;
    for (int i = 0; i < t->nbuf; i++) {
        sizes[i] = t->used[i];
        if (t->used[i] < t->cap[i]) { /* no spare room goes out with the text */
            char *x = realloc(t->data[i], (size_t)(t->used[i] ? t->used[i] : 1));
            if (x) t->data[i] = x;
        }
        give(array, first + i, t->data[i], t->data[i]);
        t->data[i] = NULL;
    }
    give(array, first + t->nbuf, sizes, sizes);
    return 0;
}

/* The finished rows of column c as a Column object (its buffers move into it). */
static PyObject *export_column(Col *c, int64_t rows) {
    void *validity = c->validity;
    const void *shown_validity = c->null_count ? validity : NULL;
    c->validity = NULL;
    if (!is_text(c->kind)) {
        struct ArrowArray *array = new_array(rows, c->null_count, 2);
        if (!array) {
            free(validity);
            return PyErr_NoMemory();
        }
        give(array, 0, validity, shown_validity);
        give(array, 1, c->values, c->values);
        c->values = NULL;
        return column_of(array, c->kind == K_FLOAT ? "g" : "l", NULL);
    }
    Strings *t = &c->str;
    if (t->nbuf == 0 && text_room(t, 1) < 0) { /* one data buffer at least */
        free(validity);
        return PyErr_NoMemory();
    }
    if (c->store == ST_VIEW) {
        struct ArrowArray *array = new_array(rows, c->null_count, 3 + t->nbuf);
        if (!array || give_text_buffers(array, 2, t) < 0) {
            if (array) {
                array->release(array);
                free(array);
            }
            free(validity);
            return PyErr_NoMemory();
        }
        give(array, 0, validity, shown_validity);
        give(array, 1, c->views, c->views);
        c->views = NULL;
        reset_strings_index(t);
        return column_of(array, "vu", NULL);
    }
    /* a dictionary: the codes, and the distinct values as string views */
    uint8_t *views = calloc((size_t)(t->n ? t->n : 1), 16);
    struct ArrowArray *dict = views ? new_array(t->n, 0, 3 + t->nbuf) : NULL;
    struct ArrowArray *array = dict ? new_array(rows, c->null_count, 2) : NULL;
    if (!array) {
        if (dict) {
            dict->release(dict);
            free(dict);
        }
        free(views);
        free(validity);
        return PyErr_NoMemory();
    }
    for (uint32_t k = 0; k < t->n; k++) {
        const Entry *e = &t->entries[k];
        put_view(views + 16 * k, t, e->len > 12 ? (int64_t)k : -1, t->data[e->buf] + e->off, e->len);
    }
    if (give_text_buffers(dict, 2, t) < 0) {
        dict->release(dict);
        free(dict);
        array->release(array);
        free(array);
        free(views);
        free(validity);
        return PyErr_NoMemory();
    }
    give(dict, 1, views, views);
    reset_strings_index(t);
    give(array, 0, validity, shown_validity);
    give(array, 1, c->codes, c->codes);
    c->codes = NULL;
    array->dictionary = dict;
    ((Owned *)array->private_data)->dictionary = dict;
    return column_of(array, "I", "vu");
}

/* Every table's rows so far as [(ids, lanes or None, [columns], maybe_unsafe)], then empty
 * tables. */
static PyObject *export_tables(Scan *s) {
    PyObject *out = PyList_New(s->ntables);
    if (!out) return NULL;
    for (int k = 0; k < s->ntables; k++) {
        Table *t = &s->tables[k];
        /* no spare room goes out with the rows (a read that flushes often keeps many tables) */
        int64_t fit = t->rows ? t->rows : 1;
        if (t->cap != fit && resize_table(s, t, fit) < 0) {
            Py_DECREF(out);
            return PyErr_NoMemory();
        }
        struct ArrowArray *ids = new_array(t->rows, 0, 2);
        if (!ids) {
            Py_DECREF(out);
            return PyErr_NoMemory();
        }
        give(ids, 1, t->ids, t->ids);
        t->ids = NULL;
        PyObject *id_column = column_of(ids, "I", NULL);
        PyObject *lane_column = Py_NewRef(Py_None);
        if (t->with_lanes && id_column) {
            struct ArrowArray *lanes = new_array(t->rows, 0, 2);
            if (lanes) {
                give(lanes, 1, t->lanes, t->lanes);
                t->lanes = NULL;
            }
            Py_DECREF(lane_column);
            lane_column = column_of(lanes, "I", NULL);
        }
        PyObject *columns = PyList_New(t->nc), *unsafe = PyTuple_New(t->nc);
        if (!id_column || !lane_column || !columns || !unsafe) {
            Py_XDECREF(id_column), Py_XDECREF(lane_column), Py_XDECREF(columns), Py_XDECREF(unsafe);
            Py_DECREF(out);
            return NULL;
        }
        for (int i = 0; i < t->nc; i++) {
            Col *c = &s->cols[t->c0 + i];
            PyTuple_SET_ITEM(unsafe, i, PyBool_FromLong(c->maybe_unsafe));
            PyObject *col = export_column(c, t->rows);
            if (!col) {
                Py_DECREF(id_column), Py_DECREF(lane_column), Py_DECREF(columns), Py_DECREF(unsafe);
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(columns, i, col);
            c->null_count = 0;
            c->maybe_unsafe = 0;
        }
        PyList_SET_ITEM(out, k, Py_BuildValue("(NNNN)", id_column, lane_column, columns, unsafe));
        t->rows = t->cap = 0;
    }
    return out;
}

static void free_scan(Scan *s) {
    if (!s) return;
    for (int k = 0; k < s->ntables; k++) free(s->tables[k].ids), free(s->tables[k].lanes);
    free_strings(&s->lane_keys);
    free(s->lane_key);
    for (int i = 0; i < s->ncols; i++) {
        Col *c = &s->cols[i];
        free(c->validity), free(c->values), free(c->views), free(c->codes);
        free_strings(&c->str);
    }
    for (Py_ssize_t i = 0; i < s->ntop; i++) free(s->top[i].key), free(s->top[i].value);
    free(s->top);
    free(s->args);
    free(s->arglen);
    free(s->scratch);
    free(s->cuts);
    free(s);
}

/* ---- adopt: the events another scanner read next, appended as if read here ---- */

/* Append n bits of src (from bit 0) to dst at bit `at`; dst's bits from `at` on are clear. */
static void append_bits(uint8_t *dst, int64_t at, const uint8_t *src, int64_t n) {
    int64_t bytes = (n + 7) / 8, base = at >> 3;
    int sh = (int)(at & 7);
    if (!sh) {
        memcpy(dst + base, src, (size_t)bytes);
        return;
    }
    for (int64_t i = 0; i < bytes; i++) {
        uint8_t b = src[i];
        dst[base + i] |= (uint8_t)(b << sh);
        if (b >> (8 - sh)) dst[base + i + 1] |= (uint8_t)(b >> (8 - sh));
    }
}

/* Entry k of t's distinct values. */
static inline const char *entry_text(const Strings *t, uint32_t k) { return t->data[t->entries[k].buf] + t->entries[k].off; }

/* Map each distinct value of `from` to its entry in `to` (added if new, in `from`'s order). */
static uint32_t *intern_all(Scan *s, Strings *to, const Strings *from) {
    uint32_t *map = malloc((size_t)(from->n ? from->n : 1) * sizeof(uint32_t));
    if (!map) return fail(s, "out of memory"), NULL;
    map[0] = 0;
    for (uint32_t k = 0; k < from->n; k++) {
        int64_t e = intern(to, entry_text(from, k), from->entries[k].len);
        if (e < 0) return free(map), fail(s, "out of memory"), NULL;
        map[k] = (uint32_t)e;
    }
    return map;
}

/* Rows of column o (n rows of another scanner) appended to column c at row r0. */
static int adopt_column(Scan *s, Col *c, int64_t r0, Col *o, int64_t n) {
    append_bits(c->validity, r0, o->validity, n);
    c->null_count += o->null_count;
    c->maybe_unsafe |= o->maybe_unsafe;
    if (!is_text(c->kind)) {
        memcpy(c->values + r0, o->values, (size_t)n * sizeof(int64_t));
        return 0;
    }
    if (c->store == ST_DICT) {
        uint32_t *map = intern_all(s, &c->str, &o->str);
        if (!map) return -1;
        for (int64_t i = 0; i < n; i++)
            c->codes[r0 + i] = o->validity[i >> 3] & (1u << (i & 7)) ? map[o->codes[i]] : 0;
        free(map);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) { /* long text interned again, in row order: as read here */
        const uint8_t *v = o->views + 16 * i;
        uint32_t len, buf, off;
        memcpy(&len, v, 4);
        if (len <= 12) {
            memcpy(c->views + 16 * (r0 + i), v, 16);
            continue;
        }
        memcpy(&buf, v + 8, 4);
        memcpy(&off, v + 12, 4);
        const char *p = o->str.data[buf] + off;
        int64_t e = intern(&c->str, p, len);
        if (e < 0) return fail(s, "out of memory");
        put_view(c->views + 16 * (r0 + i), &c->str, e, p, len);
    }
    return 0;
}

/* Whether o was made from the same spec as s (its tables and columns laid out alike). */
static int same_layout(const Scan *s, const Scan *o) {
    if (o->nslots != s->nslots || o->ntables != s->ntables || o->ncols != s->ncols || o->pid_slot != s->pid_slot ||
        o->tid_slot != s->tid_slot)
        return 0;
    for (int k = 0; k < s->ntables; k++) {
        const Table *t = &s->tables[k], *u = &o->tables[k];
        if (t->groups != u->groups || t->sparse != u->sparse || t->c0 != u->c0 || t->nc != u->nc ||
            t->with_lanes != u->with_lanes)
            return 0;
    }
    for (int i = 0; i < s->ncols; i++) {
        const Col *c = &s->cols[i], *d = &o->cols[i];
        if (c->slot != d->slot || c->kind != d->kind || c->store != d->store || c->groups != d->groups) return 0;
    }
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i].kind != o->slots[i].kind || s->slots[i].in_args != o->slots[i].in_args ||
            s->slots[i].keylen != o->slots[i].keylen ||
            memcmp(s->slots[i].key, o->slots[i].key, (size_t)s->slots[i].keylen) != 0)
            return 0;
    return 1;
}

/* Append what o read (from the event after s's last one) to s: rows, lanes, args lengths. */
static int adopt(Scan *s, Scan *o) {
    if (s->events + o->events > (int64_t)UINT32_MAX) return fail(s, "more than 4 billion events");
    uint32_t *lanes = intern_all(s, &s->lane_keys, &o->lane_keys);
    if (!lanes) return -1;
    int rc = 0;
    for (int k = 0; k < s->ntables && rc == 0; k++) {
        Table *t = &s->tables[k], *u = &o->tables[k];
        int64_t r0 = t->rows, n = u->rows;
        if (!n) continue;
        if ((rc = grow_table(s, t, r0 + n)) < 0) break;
        for (int64_t i = 0; i < n; i++) t->ids[r0 + i] = (uint32_t)(u->ids[i] + s->events);
        if (t->with_lanes)
            for (int64_t i = 0; i < n; i++) t->lanes[r0 + i] = lanes[u->lanes[i]];
        for (int i = 0; i < t->nc && rc == 0; i++)
            rc = adopt_column(s, &s->cols[t->c0 + i], r0, &o->cols[u->c0 + i], n);
        if (rc == 0) t->rows += n;
    }
    free(lanes);
    if (rc < 0) return rc;
    if (arglen_room(s, s->events + o->events) < 0) return -1;
    for (int64_t i = 0; i < o->ncuts; i++)
        if (add_cut(s, o->cuts[i].event + s->events, o->cuts[i].kind, o->cuts[i].length) < 0) return -1;
    if (o->events) memcpy(s->arglen + s->events, o->arglen, (size_t)o->events * sizeof(uint32_t));
    s->events += o->events;
    s->state = o->state;
    return 0;
}

/* ---- the spec ---- */

static int copy_name(PyObject *item, Name *name) {
    const char *text;
    Py_ssize_t len;
    int group;
    if (!PyArg_ParseTuple(item, "y#i", &text, &len, &group)) return -1;
    if (len >= MAX_KEYLEN || group < -1 || group >= MAX_GROUPS) {
        PyErr_SetString(PyExc_ValueError, "bad name in the spec");
        return -1;
    }
    memcpy(name->text, text, (size_t)len);
    name->len = len;
    name->group = group;
    return 0;
}

static int read_names(PyObject *seq_obj, Name *names, int *count) {
    PyObject *seq = PySequence_Fast(seq_obj, "names must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (n > MAX_NAMES) {
        PyErr_SetString(PyExc_ValueError, "too many names");
        rc = -1;
    }
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) rc = copy_name(PySequence_Fast_GET_ITEM(seq, i), &names[i]);
    *count = (int)n;
    Py_DECREF(seq);
    return rc;
}

/* The slots: (key, kind, in_args) each. */
static int read_slots(Scan *s, PyObject *seq_obj) {
    PyObject *seq = PySequence_Fast(seq_obj, "slots must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_SLOTS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many fields");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *key;
        Py_ssize_t keylen;
        int kind, in_args;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#ip", &key, &keylen, &kind, &in_args)) {
            Py_DECREF(seq);
            return -1;
        }
        if (kind < 0 || kind >= K_COUNT || keylen < 1 || keylen >= MAX_KEYLEN) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "bad field spec");
            return -1;
        }
        Slot *sl = &s->slots[s->nslots++];
        memcpy(sl->key, key, (size_t)keylen);
        sl->keylen = keylen;
        sl->kind = kind;
        sl->in_args = in_args;
    }
    Py_DECREF(seq);
    for (int w = 0; w < 2; w++) /* slots by key length, per level */
        for (int len = 0; len < MAX_KEYLEN; len++) {
            int k = 0;
            for (int i = 0; i < s->nslots; i++)
                if (s->slots[i].in_args == w && s->slots[i].keylen == len) s->by_len[w][len][k++] = (signed char)i;
            s->by_len[w][len][k] = -1;
        }
    return 0;
}

static int add_table(Scan *s, uint32_t groups, int sparse) {
    if (s->ntables == MAX_TABLES) {
        PyErr_SetString(PyExc_ValueError, "too many tables");
        return -1;
    }
    Table *t = &s->tables[s->ntables++];
    t->groups = groups;
    t->sparse = sparse;
    t->c0 = s->ncols;
    return 0;
}

static int add_column(Scan *s, int slot, uint32_t groups, int store) {
    if (s->ncols == MAX_COLS || slot < 0 || slot >= s->nslots || store < 0 || store > 1) {
        PyErr_SetString(PyExc_ValueError, "bad column in the spec");
        return -1;
    }
    Col *c = &s->cols[s->ncols++];
    c->slot = slot;
    c->kind = s->slots[slot].kind;
    c->groups = groups;
    c->store = is_text(c->kind) ? store : ST_VIEW;
    s->tables[s->ntables - 1].nc++;
    return 0;
}

static int read_tables(Scan *s, PyObject *seq_obj) {
    PyObject *seq = PySequence_Fast(seq_obj, "tables must be a sequence");
    if (!seq) return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && rc == 0; i++) {
        unsigned long groups;
        int sparse, with_lanes;
        PyObject *columns;
        rc = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "kppO", &groups, &sparse, &with_lanes, &columns)
                 ? 0
                 : -1;
        if (rc == 0) rc = add_table(s, (uint32_t)groups, sparse);
        if (rc == 0) s->tables[s->ntables - 1].with_lanes = with_lanes;
        PyObject *cols = rc == 0 ? PySequence_Fast(columns, "columns must be a sequence") : NULL;
        if (!cols) rc = -1;
        for (Py_ssize_t j = 0; rc == 0 && j < PySequence_Fast_GET_SIZE(cols); j++) {
            int slot, store;
            unsigned long col_groups;
            rc = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(cols, j), "iki", &slot, &col_groups, &store) ? 0 : -1;
            if (rc == 0) rc = add_column(s, slot, (uint32_t)col_groups, store);
        }
        Py_XDECREF(cols);
    }
    Py_DECREF(seq);
    return rc;
}

static int copy_mark(const char *prefix, Py_ssize_t np, const char *suffix, Py_ssize_t ns, Mark *mark) {
    if (np >= MAX_KEYLEN || ns >= MAX_KEYLEN) {
        PyErr_SetString(PyExc_ValueError, "a mark too long");
        return -1;
    }
    memcpy(mark->text[0], prefix, (size_t)np);
    memcpy(mark->text[1], suffix, (size_t)ns);
    mark->len[0] = np;
    mark->len[1] = ns;
    return 0;
}

/* limits: (max_text, (prefix, suffix) of the text mark, max_args, (prefix, suffix) of the args note). */
static int read_limits(Scan *s, PyObject *limits) {
    long long max_text, max_args;
    const char *tp, *ts, *ap, *as;
    Py_ssize_t ntp, nts, nap, nas;
    if (!PyArg_ParseTuple(limits, "L(y#y#)L(y#y#)", &max_text, &tp, &ntp, &ts, &nts, &max_args, &ap, &nap, &as,
                          &nas))
        return -1;
    if (max_text < 0 || max_args < 0 || max_text > BUFFER_LIMIT || max_args > (long long)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad limits");
        return -1;
    }
    s->max_text = max_text;
    s->max_args = max_args;
    return copy_mark(tp, ntp, ts, nts, &s->text_mark) < 0 ? -1 : copy_mark(ap, nap, as, nas, &s->args_mark);
}

static Scan *new_scan(PyObject *spec) {
    PyObject *slots, *phases, *cats, *tables, *limits;
    Scan *s = calloc(1, sizeof(Scan));
    if (!s) {
        PyErr_NoMemory();
        return NULL;
    }
    if (!PyArg_ParseTuple(spec, "OiiOOiiOO", &slots, &s->ph_slot, &s->cat_slot, &phases, &cats, &s->x_default,
                          &s->other_group, &tables, &limits) ||
        read_limits(s, limits) < 0 || read_slots(s, slots) < 0 || read_names(phases, s->phases, &s->nphases) < 0 ||
        read_names(cats, s->cats, &s->ncats) < 0 || read_tables(s, tables) < 0) {
        free_scan(s);
        return NULL;
    }
    s->pid_slot = s->tid_slot = -1;
    s->lane_stamp = -1;
    for (int i = 0; i < s->nslots; i++) {
        Slot *sl = &s->slots[i];
        if (!sl->in_args && sl->kind == K_ID && sl->keylen == 3 && memcmp(sl->key, "pid", 3) == 0) s->pid_slot = i;
        if (!sl->in_args && sl->kind == K_ID && sl->keylen == 3 && memcmp(sl->key, "tid", 3) == 0) s->tid_slot = i;
    }
    for (int k = 0; k < s->ntables; k++)
        if (s->tables[k].with_lanes && (s->pid_slot < 0 || s->tid_slot < 0)) {
            PyErr_SetString(PyExc_ValueError, "lanes need pid and tid (ID) fields");
            free_scan(s);
            return NULL;
        }
    if (s->ph_slot < 0 || s->ph_slot >= s->nslots || s->cat_slot < 0 || s->cat_slot >= s->nslots ||
        s->x_default < 0 || s->x_default >= MAX_GROUPS || s->other_group < 0 || s->other_group >= MAX_GROUPS) {
        PyErr_SetString(PyExc_ValueError, "bad spec");
        free_scan(s);
        return NULL;
    }
    return s;
}

/* ---- the Scanner type ---- */

typedef struct {
    PyObject_HEAD
    Scan *s;
    int busy;
} ScannerObject;

static int scanner_init(ScannerObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *spec;
    static char *names[] = {"spec", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", names, &spec)) return -1;
    if (self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner already set up");
        return -1;
    }
    self->s = new_scan(spec);
    return self->s ? 0 : -1;
}

static void scanner_dealloc(ScannerObject *self) {
    free_scan(self->s);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Scan *claim(ScannerObject *self) {
    if (!self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner not set up");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner in use by another thread");
        return NULL;
    }
    self->busy = 1;
    return self->s;
}

/* feed(buffer, final) -> (status, consumed, reason): see run(). */
static PyObject *scanner_feed(ScannerObject *self, PyObject *args) {
    Py_buffer view;
    int final;
    if (!PyArg_ParseTuple(args, "y*p", &view, &final)) return NULL;
    Scan *s = claim(self);
    if (!s) {
        PyBuffer_Release(&view);
        return NULL;
    }
    s->base = s->p = view.buf;
    s->end = s->base + view.len;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run(s, final, -1);
    Py_END_ALLOW_THREADS
    Py_ssize_t consumed = s->p - s->base;
    const char *why = rc == R_EVENT || rc == R_DOCUMENT ? s->why : NULL;
    s->base = s->p = s->end = NULL;
    self->busy = 0;
    PyBuffer_Release(&view);
    if (s->oom) return PyErr_NoMemory();
    return Py_BuildValue("(inz)", rc, consumed, why);
}

/* probe(buffer, start, count, final) -> 0 (from start on, after an event, `count` events read,
 * or the rest of the document when the array ends first), 1 (the input ends first), 2 (they
 * cannot be read). Keeps nothing. */
static PyObject *scanner_probe(ScannerObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, count;
    int final;
    if (!PyArg_ParseTuple(args, "y*nnp", &view, &start, &count, &final)) return NULL;
    if (start < 0 || start > view.len || count < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "bad probe");
        return NULL;
    }
    Scan *s = claim(self);
    if (!s) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int state = s->state;
    s->base = view.buf;
    s->p = s->base + start;
    s->end = s->base + view.len;
    s->dry = 1;
    s->state = D_EV_NEXT;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run(s, final, count);
    Py_END_ALLOW_THREADS
    s->dry = 0;
    s->state = state;
    s->base = s->p = s->end = NULL;
    self->busy = 0;
    PyBuffer_Release(&view);
    if (s->oom) return PyErr_NoMemory();
    return PyLong_FromLong(rc == R_DONE || rc == R_TRUNCATED ? 0 : rc == R_MORE ? 1 : 2);
}

/* skip_events(args): events read elsewhere (one raw args bytes each, b"" = none) take the
 * next ids; reading goes on after an event. */
static PyObject *scanner_skip_events(ScannerObject *self, PyObject *args_obj) {
    PyObject *seq = PySequence_Fast(args_obj, "skip_events takes a sequence of bytes");
    if (!seq) return NULL;
    Scan *s = claim(self);
    if (!s) {
        Py_DECREF(seq);
        return NULL;
    }
    s->spent = 1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && rc == 0; i++) {
        char *data;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, i), &data, &len) < 0) {
            rc = -2;
            break;
        }
        s->why = NULL;
        rc = keep_args(s, data, (size_t)len);
        if (rc == 0) s->events++;
    }
    if (s->state == D_EV) s->state = D_EV_NEXT;
    self->busy = 0;
    Py_DECREF(seq);
    if (rc == -2) return NULL;
    if (rc < 0) {
        if (s->oom) return PyErr_NoMemory();
        PyErr_SetString(PyExc_ValueError, s->why ? s->why : "cannot skip events");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* take_args() -> the raw args of the events read since the last call, end to end. */
static PyObject *scanner_take_args(ScannerObject *self, PyObject *unused) {
    (void)unused;
    Scan *s = claim(self);
    if (!s) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(s->args ? s->args : "", (Py_ssize_t)s->nargs);
    s->nargs = 0;
    self->busy = 0;
    return out;
}

static PyObject *scanner_flush(ScannerObject *self, PyObject *unused) {
    (void)unused;
    Scan *s = claim(self);
    if (!s) return NULL;
    s->spent = 1;
    PyObject *out = export_tables(s);
    self->busy = 0;
    return out;
}

/* finish() -> (form, top, args lengths, lanes): top is [(key, value JSON bytes or None for
 * traceEvents)] in file order; args lengths one uint32 per event; lanes the (pid, tid) of each
 * lane (bytes, or None for null). */
static PyObject *scanner_finish(ScannerObject *self, PyObject *unused) {
    (void)unused;
    Scan *s = claim(self);
    if (!s) return NULL;
    s->spent = 1;
    PyObject *top = PyList_New(s->ntop), *lengths = NULL;
    for (Py_ssize_t i = 0; top && i < s->ntop; i++) {
        Top *t = &s->top[i];
        PyObject *value = t->value ? PyBytes_FromStringAndSize(t->value, t->len) : Py_NewRef(Py_None);
        PyObject *item = value ? Py_BuildValue("(s#N)", t->key, t->keylen, value) : NULL;
        if (!item) {
            Py_CLEAR(top);
            break;
        }
        PyList_SET_ITEM(top, i, item);
    }
    if (top) {
        struct ArrowArray *array = new_array(s->events, 0, 2);
        uint32_t *values = s->arglen ? s->arglen : malloc(4);
        if (array && values) {
            give(array, 1, values, values);
            s->arglen = NULL;
            s->caparglen = 0;
            lengths = column_of(array, "I", NULL);
        } else {
            if (array) {
                array->release(array);
                free(array);
            }
            PyErr_NoMemory();
        }
    }
    self->busy = 0;
    if (!top || !lengths) {
        Py_XDECREF(top);
        Py_XDECREF(lengths);
        return NULL;
    }
    PyObject *lanes = PyList_New(s->lane_keys.n);
    for (uint32_t i = 0; lanes && i < s->lane_keys.n; i++) {
        const Entry *e = &s->lane_keys.entries[i];
        const char *key = s->lane_keys.data[e->buf] + e->off;
        PyObject *parts[2];
        size_t at = 0;
        for (int k = 0; k < 2; k++) {
            uint32_t len;
            memcpy(&len, key + at + 1, 4);
            parts[k] = key[at] ? PyBytes_FromStringAndSize(key + at + 5, len) : Py_NewRef(Py_None);
            at += 5 + (key[at] ? len : 0);
        }
        PyObject *item = parts[0] && parts[1] ? PyTuple_Pack(2, parts[0], parts[1]) : NULL;
        Py_XDECREF(parts[0]);
        Py_XDECREF(parts[1]);
        if (!item) {
            Py_CLEAR(lanes);
            break;
        }
        PyList_SET_ITEM(lanes, i, item);
    }
    if (!lanes) {
        Py_DECREF(top);
        Py_DECREF(lengths);
        return NULL;
    }
    return Py_BuildValue("(sNNN)", s->form ? "array" : "object", top, lengths, lanes);
}

/* add_lane(pid, tid) -> the lane of a (pid, tid) pair (bytes or None each), added if new: for
 * events read elsewhere, so that every event of a trace has its lane in one numbering. */
static PyObject *scanner_add_lane(ScannerObject *self, PyObject *args) {
    const char *pid, *tid;
    Py_ssize_t npid, ntid;
    if (!PyArg_ParseTuple(args, "z#z#", &pid, &npid, &tid, &ntid)) return NULL;
    Scan *s = claim(self);
    if (!s) return NULL;
    s->why = NULL;
    s->spent = 1;
    int64_t lane = lane_of(s, pid, npid, tid, ntid);
    self->busy = 0;
    if (lane < 0) return PyErr_NoMemory();
    return PyLong_FromLongLong(lane);
}

/* resume_events(): this scanner reads from the middle of a traceEvents array, after a comma
 * (its events are numbered from 0; another scanner adopts them). */
static PyObject *scanner_resume_events(ScannerObject *self, PyObject *unused) {
    (void)unused;
    Scan *s = claim(self);
    if (!s) return NULL;
    int fresh = s->state == D_START && s->events == 0 && !s->spent;
    if (fresh) {
        s->state = D_EV;
        s->found_events = s->resumed = 1;
    }
    self->busy = 0;
    if (!fresh) {
        PyErr_SetString(PyExc_ValueError, "resume_events on a scanner that has read");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* adopt(other) -> bool: append the events `other` (resumed) read, as if this scanner had read
 * them next: True. False (nothing changed) unless this scanner stopped just after a comma in
 * traceEvents (the caller checks that other began there) and other, made from the same spec,
 * stopped between events with its args taken, and was never flushed, finished, given lanes or
 * events by hand, or adopted before (it is spent once adopted). */
static PyObject *scanner_adopt(ScannerObject *self, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, Py_TYPE(self))) {
        PyErr_SetString(PyExc_TypeError, "adopt takes a Scanner");
        return NULL;
    }
    ScannerObject *other = (ScannerObject *)arg;
    if (other == self) {
        PyErr_SetString(PyExc_ValueError, "a scanner cannot adopt itself");
        return NULL;
    }
    Scan *s = claim(self);
    if (!s) return NULL;
    Scan *o = claim(other);
    if (!o) {
        self->busy = 0;
        return NULL;
    }
    int fits = s->state == D_EV && !s->resumed && o->resumed && !o->spent && o->nargs == 0 &&
               o->ntop == 0 && (o->state == D_EV || o->state == D_EV_NEXT) && o->trailing_commas == 0 &&
               (o->events == 0 || o->arglen) && same_layout(s, o);
    int rc = 0;
    if (fits) {
        s->why = NULL;
        o->spent = 1;
        Py_BEGIN_ALLOW_THREADS
        rc = adopt(s, o);
        Py_END_ALLOW_THREADS
    }
    self->busy = other->busy = 0;
    if (rc < 0) {
        if (s->oom) return PyErr_NoMemory();
        PyErr_SetString(PyExc_ValueError, s->why ? s->why : "cannot adopt");
        return NULL;
    }
    return PyBool_FromLong(fits);
}

static PyObject *scanner_events(ScannerObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong(self->s ? (long long)self->s->events : 0);
}

/* cuts: [(event id, kind, original length)]: 0 a text value cut, 1 an args object not kept. */
static PyObject *scanner_cuts(ScannerObject *self, void *closure) {
    (void)closure;
    Scan *s = self->s;
    PyObject *out = PyList_New(s ? (Py_ssize_t)s->ncuts : 0);
    for (Py_ssize_t i = 0; out && s && i < (Py_ssize_t)s->ncuts; i++) {
        PyObject *item = Py_BuildValue("(LiL)", (long long)s->cuts[i].event, s->cuts[i].kind,
                                       (long long)s->cuts[i].length);
        if (!item) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *scanner_trailing_commas(ScannerObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong(self->s ? (long long)self->s->trailing_commas : 0);
}

static PyObject *scanner_state(ScannerObject *self, void *closure) {
    (void)closure;
    static const char *names[] = {"start", "header", "header", "header", "events", "events", "events", "end"};
    int state = self->s ? self->s->state : D_START;
    if (self->s && state == D_OBJ_NEXT && self->s->found_events) return PyUnicode_FromString("tail");
    if (self->s && state == D_OBJ_KEY && self->s->found_events) return PyUnicode_FromString("tail");
    return PyUnicode_FromString(names[state]);
}

static PyMethodDef scanner_methods[] = {
    {"feed", (PyCFunction)scanner_feed, METH_VARARGS, "feed(buffer, final) -> (status, consumed, reason)"},
    {"probe", (PyCFunction)scanner_probe, METH_VARARGS, "probe(buffer, start, count, final) -> 0 | 1 | 2"},
    {"skip_events", (PyCFunction)scanner_skip_events, METH_O, "skip_events(raw args of each) -> None"},
    {"take_args", (PyCFunction)scanner_take_args, METH_NOARGS, "take_args() -> bytes"},
    {"flush", (PyCFunction)scanner_flush, METH_NOARGS, "flush() -> [(ids, lanes, columns, maybe_unsafe)]"},
    {"finish", (PyCFunction)scanner_finish, METH_NOARGS, "finish() -> (form, top, args lengths, lanes)"},
    {"add_lane", (PyCFunction)scanner_add_lane, METH_VARARGS, "add_lane(pid, tid) -> lane"},
    {"resume_events", (PyCFunction)scanner_resume_events, METH_NOARGS, "resume_events() -> None"},
    {"adopt", (PyCFunction)scanner_adopt, METH_O, "adopt(other) -> bool"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef scanner_getset[] = {
    {"events", (getter)scanner_events, NULL, "events read so far", NULL},
    {"trailing_commas", (getter)scanner_trailing_commas, NULL, "commas before the array's end", NULL},
    {"cuts", (getter)scanner_cuts, NULL, "values cut and args not kept: [(event, kind, length)]", NULL},
    {"state", (getter)scanner_state, NULL, "where in the document: start, header, events, tail, end", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetui.trace._scan.Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(spec): reads a trace block by block into tables (see the module's comment).",
    .tp_methods = scanner_methods,
    .tp_getset = scanner_getset,
    .tp_init = (initproc)scanner_init,
    .tp_new = PyType_GenericNew,
};

/* ---- pick: fields of objects at byte spans ---- */

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
    Table *t = &s->tables[0];
    for (Py_ssize_t i = 0; i < n; i++) {
        *bad = i;
        s->stamp++;
        if (start[i] != -1 && end[i] != -1) {
            if (start[i] < 0 || end[i] > len || start[i] >= end[i] || s->base[start[i]] != '{')
                return fail(s, "a span that is not an object");
            s->p = s->base + start[i];
            s->end = s->base + end[i];
            if (read_object(s, 1) < 0) return -1;
            if (s->p != s->end) return fail(s, "trailing data");
        }
        if (t->rows == t->cap && grow_table(s, t, t->rows + 1) < 0) return -1;
        t->ids[t->rows] = (uint32_t)i;
        for (int k = t->c0; k < t->c0 + t->nc; k++)
            if (put_value(s, &s->cols[k], t->rows, staged(s, &s->slots[s->cols[k].slot])) < 0) return -1;
        t->rows++;
    }
    return 0;
}

/* pick(buffer, starts, ends, fields): the given fields (key, kind, True) of the JSON objects at
 * byte spans [starts[i], ends[i]) of buffer (None: no object, all null), one row each.
 * Returns (columns, maybe_unsafe), or a str saying why not. */
static PyObject *pick(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer view;
    PyObject *starts_obj, *ends_obj, *fields;
    if (!PyArg_ParseTuple(args, "y*OOO", &view, &starts_obj, &ends_obj, &fields)) return NULL;
    PyObject *starts = PySequence_Fast(starts_obj, "starts must be a sequence");
    PyObject *ends = PySequence_Fast(ends_obj, "ends must be a sequence");
    Scan *s = calloc(1, sizeof(Scan));
    Py_ssize_t *spans = NULL;
    PyObject *result = NULL;
    if (!starts || !ends || !s) {
        if (!s) PyErr_NoMemory();
        goto done;
    }
    if (read_slots(s, fields) < 0 || add_table(s, 1, 0) < 0) goto done;
    for (int i = 0; i < s->nslots; i++)
        if (add_column(s, i, 1, ST_VIEW) < 0) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(starts);
    if (PySequence_Fast_GET_SIZE(ends) != n) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    spans = malloc((size_t)(2 * n + 1) * sizeof(Py_ssize_t));
    if (!spans) {
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
    if (s->oom) {
        PyErr_NoMemory();
    } else if (rc < 0) {
        result = PyUnicode_FromFormat("%s in object %zd", s->why ? s->why : "refused", bad);
    } else {
        PyObject *tables = export_tables(s);
        if (tables) {
            PyObject *first = PyList_GET_ITEM(tables, 0);
            result = Py_BuildValue("(OO)", PyTuple_GET_ITEM(first, 2), PyTuple_GET_ITEM(first, 3));
            Py_DECREF(tables);
        }
    }
done:
    free(spans);
    free_scan(s);
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

/* sum_at(index, values, size): out[index[i]] += values[i] for every i with 0 <= index[i] < size
 * (others skipped), out starting at zero; both int64 without nulls, of one length. Returns the
 * int64 column of `size` values, or None when a column does not qualify. A scatter-add in one
 * pass (the children's total of each node, the work launched at each position). */
static PyObject *sum_at(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *index_obj, *values_obj;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "OOn", &index_obj, &values_obj, &size)) return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "negative size");
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, index_obj, values_obj);
    if (!pair) return NULL;
    int64_t *index, *values, n;
    int got = read_int64_pair(pair, &index, &values, &n);
    Py_DECREF(pair);
    if (got <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    int64_t *out = calloc((size_t)(size ? size : 1), sizeof(int64_t));
    if (!out) {
        free(index), free(values);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++)
        if (index[i] >= 0 && index[i] < size) out[index[i]] += values[i];
    Py_END_ALLOW_THREADS
    free(index);
    free(values);
    return int64_column(out, size);
}

static PyMethodDef methods[] = {
    {"pick", pick, METH_VARARGS, "pick(buffer, starts, ends, fields) -> (columns, maybe_unsafe) | reason"},
    {"nest", nest, METH_VARARGS, "nest(track, end) -> (parent, depth, end, previous sibling) | None"},
    {"marked_ancestor", marked_ancestor, METH_VARARGS, "marked_ancestor(parent, marked) -> nearest | None"},
    {"sum_at", sum_at, METH_VARARGS, "sum_at(index, values, size) -> sums | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_scan",
    .m_doc = "Native fast path of the trace decoder (strict JSON -> Arrow tables, block by block).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__scan(void) {
    init_plain();
    if (!C_NUMERIC && !open_c_locale()) { /* kept for the life of the process */
        PyErr_SetString(PyExc_ImportError, "cannot open the C numeric locale");
        return NULL;
    }
    if (PyType_Ready(&ColumnType) < 0 || PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&ColumnType);
    if (PyModule_AddObject(m, "Column", (PyObject *)&ColumnType) < 0) {
        Py_DECREF(&ColumnType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
