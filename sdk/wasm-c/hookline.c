/* hookline.c: the hookline WebAssembly kit for C; see hookline.h and docs/wasm.md. */
#include "hookline.h"

#define EXPORT(name) __attribute__((export_name(name)))

/* ---- The arena ---------------------------------------------------------------------------- */
/* Everything lives between the end of the static data (`__heap_base`, set by the linker) and the
 * arena's top; hookline_alloc resets the top, so each request starts with an empty arena. Memory
 * grows in 64 KiB pages as needed (up to the manifest's `wasm.memory_mb`). */

extern unsigned char __heap_base;
static uintptr_t top;

void *hl_alloc(size_t n) {
    if (top == 0)
        top = (uintptr_t)&__heap_base;
    uintptr_t start = (top + 7) & ~(uintptr_t)7;
    uintptr_t end = start + n;
    if (end < start)
        return NULL;
    uintptr_t have = __builtin_wasm_memory_size(0) * 65536;
    if (end > have) {
        size_t pages = (end - have + 65535) / 65536;
        if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1)
            return NULL;
    }
    top = end;
    return (void *)start;
}

static void arena_reset(void) { top = (uintptr_t)&__heap_base; }

/* Without a libc, the compiler's own calls to these (struct copies) land here. */
void *memcpy(void *to, const void *from, size_t n) {
    unsigned char *d = to;
    const unsigned char *s = from;
    while (n--)
        *d++ = *s++;
    return to;
}

void *memset(void *to, int c, size_t n) {
    unsigned char *d = to;
    while (n--)
        *d++ = (unsigned char)c;
    return to;
}

/* ---- The reply being written -------------------------------------------------------------- */

enum state { NONE, KEEP, REPLACE, ERROR };

static struct {
    char *ptr;
    size_t len, cap;
    bool out_of_memory;
} out;
static enum state state;
static uint64_t current_id;

static void out_reset(void) {
    out.ptr = NULL;
    out.len = out.cap = 0;
    out.out_of_memory = false;
}

void hl_write(hl_str json) {
    if (out.out_of_memory)
        return;
    if (out.len + json.len > out.cap) {
        size_t cap = out.cap ? out.cap * 2 : 256;
        while (cap < out.len + json.len)
            cap *= 2;
        char *grown = hl_alloc(cap);
        if (!grown) {
            out.out_of_memory = true;
            return;
        }
        memcpy(grown, out.ptr, out.len);
        out.ptr = grown;
        out.cap = cap;
    }
    memcpy(out.ptr + out.len, json.ptr, json.len);
    out.len += json.len;
}

static size_t cstrlen(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static hl_str cstr(const char *s) { return (hl_str){s, s ? cstrlen(s) : 0}; }

void hl_write_raw(const char *json) { hl_write(cstr(json)); }

void hl_write_u64(uint64_t n) {
    char digits[20];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    hl_write((hl_str){digits + i, sizeof digits - i});
}

void hl_write_string(hl_str text) {
    static const char hex[] = "0123456789abcdef";
    hl_write(HL_STR("\""));
    size_t plain = 0; /* start of the run of bytes that need no escape */
    for (size_t i = 0; i < text.len; i++) {
        unsigned char c = (unsigned char)text.ptr[i];
        char esc[6];
        size_t n = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            if (c >= 0x20)
                continue;
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            n = 6;
        }
        hl_write((hl_str){text.ptr + plain, i - plain});
        hl_write((hl_str){esc, n});
        plain = i + 1;
    }
    hl_write((hl_str){text.ptr + plain, text.len - plain});
    hl_write(HL_STR("\""));
}

void hl_write_cstring(const char *text) { hl_write_string(cstr(text)); }

static void begin(enum state next, const char *type) {
    out_reset();
    state = next;
    hl_write(HL_STR("{\"type\":\""));
    hl_write_raw(type);
    hl_write(HL_STR("\",\"id\":"));
    hl_write_u64(current_id);
}

void hl_keep(void) {
    begin(KEEP, "keep");
    hl_write(HL_STR("}"));
}

void hl_error_str(hl_str message) {
    begin(ERROR, "error");
    hl_write(HL_STR(",\"message\":"));
    hl_write_string(message);
    hl_write(HL_STR("}"));
}

void hl_error(const char *message) { hl_error_str(cstr(message)); }

void hl_replace_begin(void) {
    begin(REPLACE, "replace");
    hl_write(HL_STR(",\"value\":"));
}

/* ---- Reading JSON ------------------------------------------------------------------------- */

bool hl_eq(hl_str text, const char *literal) {
    size_t i = 0;
    for (; i < text.len; i++)
        if (literal[i] != text.ptr[i] || !literal[i])
            return false;
    return literal[i] == 0;
}

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The end of the JSON string starting at `p` (at its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
        else if ((unsigned char)*p < 0x20)
            return NULL;
    }
    return NULL;
}

/* The end of the JSON value starting at `p`, or NULL. Objects and arrays are skipped by depth
 * (any depth, no recursion). */
static const char *skip_value(const char *p, const char *end) {
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, end);
                if (!p)
                    return NULL;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    const char *start = p;
    while (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-' ||
                       *p == '+' || *p == '.' || *p == 'E'))
        p++;
    return p > start ? p : NULL;
}

bool hl_next_member(hl_str *members, hl_str *key, hl_str *value) {
    const char *end = members->ptr + members->len;
    const char *p = skip_ws(members->ptr, end);
    if (p >= end)
        return false;
    bool first = *p == '{';
    if (!first && *p != ',')
        return false;
    p = skip_ws(p + 1, end);
    if (p >= end || *p != '"')
        return false;
    const char *key_end = skip_string(p, end);
    if (!key_end || !hl_string((hl_str){p, (size_t)(key_end - p)}, key))
        return false;
    p = skip_ws(key_end, end);
    if (p >= end || *p != ':')
        return false;
    p = skip_ws(p + 1, end);
    const char *value_end = skip_value(p, end);
    if (!value_end)
        return false;
    *value = (hl_str){p, (size_t)(value_end - p)};
    *members = (hl_str){value_end, (size_t)(end - value_end)};
    return true;
}

bool hl_get(hl_str object, const char *key, hl_str *value) {
    hl_str name, found;
    while (hl_next_member(&object, &name, &found)) {
        if (hl_eq(name, key)) {
            *value = found;
            return true;
        }
    }
    return false;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The code unit of the `\uXXXX` escape at `p` (at the `u`), or -1. */
static long unit(const char *p, const char *end) {
    if (end - p < 5)
        return -1;
    long v = 0;
    for (int i = 1; i <= 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t utf8(char *to, unsigned long cp) {
    if (cp < 0x80) {
        to[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        to[0] = (char)(0xC0 | cp >> 6);
        to[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        to[0] = (char)(0xE0 | cp >> 12);
        to[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        to[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    to[0] = (char)(0xF0 | cp >> 18);
    to[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    to[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    to[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool hl_string(hl_str raw, hl_str *text) {
    const char *p = raw.ptr, *end = raw.ptr + raw.len;
    if (raw.len < 2 || *p != '"' || skip_string(p, end) != end)
        return false;
    p++, end--;
    size_t escapes = 0;
    for (const char *q = p; q < end; q++)
        escapes += *q == '\\';
    if (!escapes) {
        *text = (hl_str){p, (size_t)(end - p)};
        return true;
    }
    /* Unescaped text is never longer than its escaped form. */
    char *to = hl_alloc((size_t)(end - p));
    if (!to)
        return false;
    size_t n = 0;
    while (p < end) {
        if (*p != '\\') {
            to[n++] = *p++;
            continue;
        }
        p++;
        switch (*p) {
        case '"': case '\\': case '/': to[n++] = *p; break;
        case 'n': to[n++] = '\n'; break;
        case 'r': to[n++] = '\r'; break;
        case 't': to[n++] = '\t'; break;
        case 'b': to[n++] = '\b'; break;
        case 'f': to[n++] = '\f'; break;
        case 'u': {
            long cp = unit(p, end);
            if (cp < 0)
                return false;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
                long low = unit(p + 2, end);
                if (low >= 0xDC00 && low < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000)
                cp = 0xFFFD; /* a lone surrogate */
            n += utf8(to + n, (unsigned long)cp);
            break;
        }
        default:
            return false;
        }
        p++;
    }
    *text = (hl_str){to, n};
    return true;
}

bool hl_get_string(hl_str object, const char *key, hl_str *text) {
    hl_str raw;
    return hl_get(object, key, &raw) && hl_string(raw, text);
}

bool hl_u64(hl_str raw, uint64_t *n) {
    if (raw.len == 0 || raw.len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < raw.len; i++) {
        char c = raw.ptr[i];
        if (c < '0' || c > '9')
            return false;
        uint64_t next = v * 10 + (uint64_t)(c - '0');
        if (next / 10 != v)
            return false;
        v = next;
    }
    *n = v;
    return true;
}

bool hl_next(hl_str *items, hl_str *item) {
    const char *end = items->ptr + items->len;
    const char *p = skip_ws(items->ptr, end);
    if (p >= end)
        return false;
    bool first = *p == '[';
    if (first || *p == ',')
        p = skip_ws(p + 1, end);
    else
        return false;
    if (p >= end || (*p == ']' && first))
        return false;
    const char *value_end = skip_value(p, end);
    if (!value_end)
        return false;
    *item = (hl_str){p, (size_t)(value_end - p)};
    *items = (hl_str){value_end, (size_t)(end - value_end)};
    return true;
}

/* ---- The exports -------------------------------------------------------------------------- */

static int64_t packed(void) {
    if (out.out_of_memory) {
        /* Nothing left to write a reply with: a fixed one, in static memory. */
        static char fixed[96];
        out.ptr = fixed;
        out.len = 0;
        out.cap = sizeof fixed;
        out.out_of_memory = false;
        hl_write(HL_STR("{\"type\":\"error\",\"id\":"));
        hl_write_u64(current_id);
        hl_write(HL_STR(",\"message\":\"the plugin ran out of memory\"}"));
    }
    return (int64_t)((uint64_t)(uintptr_t)out.ptr << 32 | (uint64_t)out.len);
}

EXPORT("hookline_abi") int32_t hookline_abi(void) { return 1; }

EXPORT("hookline_alloc") int32_t hookline_alloc(int32_t len) {
    arena_reset();
    if (len < 0)
        return 0;
    return (int32_t)(uintptr_t)hl_alloc((size_t)len);
}

static void write_names(const char *field, const char *const *names) {
    hl_write_raw(field);
    hl_write(HL_STR(":["));
    for (size_t i = 0; names && names[i]; i++) {
        if (i)
            hl_write(HL_STR(","));
        hl_write_cstring(names[i]);
    }
    hl_write(HL_STR("]"));
}

EXPORT("hookline_hello") int64_t hookline_hello(void) {
    arena_reset();
    out_reset();
    hl_write(HL_STR("{\"type\":\"hello\",\"protocol\":1,"));
    write_names("\"hooks\"", hl_plugin.hooks);
    write_names(",\"raw_hooks\"", hl_plugin.raw_hooks);
    write_names(",\"events\"", hl_plugin.events);
    hl_write(HL_STR(",\"tools\":["));
    for (size_t i = 0; hl_plugin.tools && hl_plugin.tools[i].name; i++) {
        const hl_tool *tool = &hl_plugin.tools[i];
        hl_write(i ? HL_STR(",{\"name\":") : HL_STR("{\"name\":"));
        hl_write_cstring(tool->name);
        hl_write(HL_STR(",\"description\":"));
        hl_write_cstring(tool->description ? tool->description : "");
        hl_write(HL_STR(",\"risk\":"));
        hl_write_cstring(tool->risk ? tool->risk : "read");
        hl_write(HL_STR(",\"authority\":"));
        hl_write_cstring(tool->authority ? tool->authority : "workspace");
        hl_write(HL_STR("}"));
    }
    hl_write(HL_STR("]}"));
    return packed();
}

/* Decodes the request; NULL, or what is wrong with it. */
static const char *decode(hl_str raw, hl_request *rq) {
    hl_str id;
    const char *end = raw.ptr + raw.len, *p = skip_ws(raw.ptr, end), *q;
    bool object = p < end && *p == '{' && (q = skip_value(p, end)) && skip_ws(q, end) == end;
    *rq = (hl_request){.raw = raw};
    /* The id first: a request cut short still gets its error under its own id. */
    if (!hl_get(raw, "id", &id) || !hl_u64(id, &rq->id))
        return object ? "the request has no id" : "the request is not a JSON object";
    current_id = rq->id;
    if (!object)
        return "the request is not a JSON object";
    if (!hl_get_string(raw, "type", &rq->type))
        return "the request has no type";
    const char *name, *value;
    if (hl_eq(rq->type, "hook"))
        name = "hook", value = "value";
    else if (hl_eq(rq->type, "tool"))
        name = "tool", value = "arguments";
    else if (hl_eq(rq->type, "event"))
        name = "key", value = "context";
    else
        return "the request's type is not hook, tool or event";
    if (!hl_get_string(raw, name, &rq->name) || !hl_get(raw, value, &rq->value))
        return "the request is not a protocol request";
    if (!hl_eq(rq->type, "event") && !hl_get_string(raw, "session", &rq->session))
        return "the request has no session";
    return NULL;
}

EXPORT("hookline_call") int64_t hookline_call(int32_t ptr, int32_t len) {
    hl_request rq;
    current_id = 0;
    state = NONE;
    out_reset();
    const char *problem = decode((hl_str){(const char *)(uintptr_t)ptr, (size_t)len}, &rq);
    if (problem)
        hl_error(problem);
    else
        hl_handle(&rq);
    if (state == NONE)
        hl_keep();
    else if (state == REPLACE)
        hl_write(HL_STR("}"));
    return packed();
}
