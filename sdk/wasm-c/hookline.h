/* hookline.h: the hookline WebAssembly kit for C (the core-module guest ABI, version 1:
 * docs/wasm.md in the hookline repository).
 *
 * A plugin is one C file that includes this header, defines `hl_plugin` (its hello) and
 * `hl_handle` (its handler), and is built with hookline.c for wasm32 with no libc:
 *
 *     python3 -m ziglang cc --target=wasm32-freestanding -nostdlib -Os -Wl,--no-entry \
 *         -o plugin.wasm plugin.c hookline.c
 *
 * The kit exports exactly the ABI (`memory`, `hookline_abi`, `hookline_alloc`, `hookline_hello`,
 * `hookline_call`) and imports nothing unless the plugin calls `hl_log` (which imports
 * `hookline.log`, granted by the `stdio` capability). Requests and replies are the protocol's
 * JSON (docs/protocol.md). Every piece of memory the kit hands out lives in one arena that is
 * reset when the host asks for room for the next request: nothing a handler gets survives its call.
 */
#ifndef HOOKLINE_H
#define HOOKLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A piece of text: `len` bytes at `ptr`, not NUL-terminated. */
typedef struct {
    const char *ptr;
    size_t len;
} hl_str;

/* `hl_str` of a string literal. */
#define HL_STR(literal) ((hl_str){(literal), sizeof(literal) - 1})

/* A tool the plugin provides. `risk`: "read" (NULL), "write", "execute" or "critical";
 * `authority`: "workspace" (NULL) or "host". */
typedef struct {
    const char *name;
    const char *description;
    const char *risk;
    const char *authority;
} hl_tool;

/* The plugin's hello: NULL-terminated lists of hook wire names, raw hook names and event keys,
 * and the tools, ended by an entry whose name is NULL. Any of them may be NULL (none). */
typedef struct {
    const char *const *hooks;
    const char *const *raw_hooks;
    const char *const *events;
    const hl_tool *tools;
} hl_hello;

/* One request, decoded. */
typedef struct {
    hl_str type;    /* "hook", "tool" or "event" */
    uint64_t id;    /* the request's id; the kit puts it in the reply */
    hl_str name;    /* the hook's wire name, the tool's name or the event's key (unescaped) */
    hl_str value;   /* raw JSON: the hook's value, the tool's arguments or the event's context */
    hl_str session; /* hooks and tools: the session id (unescaped); empty for events */
    hl_str raw;     /* the whole request, raw JSON (for the fields above not decoded here) */
} hl_request;

/* ---- Written by the plugin ---------------------------------------------------------------- */

/* The hello the kit writes (with `"protocol": 1`). */
extern const hl_hello hl_plugin;

/* Answers one request by calling hl_keep, hl_error or hl_replace_begin (then the hl_write_*
 * functions for the value). Returning without any of them keeps the value. */
void hl_handle(const hl_request *request);

/* ---- Replies ------------------------------------------------------------------------------- */

/* `{"type":"keep","id":N}`. */
void hl_keep(void);
/* `{"type":"error","id":N,"message":...}`: the hook is skipped with the message as its note.
 * Replaces whatever was written for this request so far. */
void hl_error(const char *message);
void hl_error_str(hl_str message);
/* Starts `{"type":"replace","id":N,"value":`; write exactly one JSON value with hl_write_*; the
 * kit closes the reply when hl_handle returns. A tool answers `{"text": ..., "success": true}`. */
void hl_replace_begin(void);

/* ---- Writing JSON (after hl_replace_begin) ------------------------------------------------- */

/* Raw JSON text, as it is (a field name with its quotes, punctuation, a raw value read from
 * the request). */
void hl_write(hl_str json);
void hl_write_raw(const char *json);
/* A JSON string of `text` (UTF-8), quoted and escaped. */
void hl_write_string(hl_str text);
void hl_write_cstring(const char *text);
/* An unsigned number. */
void hl_write_u64(uint64_t n);

/* ---- Reading JSON -------------------------------------------------------------------------- */

/* Whether `text` is exactly the NUL-terminated `literal`. */
bool hl_eq(hl_str text, const char *literal);
/* The raw value of the member `key` of the JSON object `object`; false when there is none or
 * `object` is not an object. */
bool hl_get(hl_str object, const char *key, hl_str *value);
/* The text of the raw JSON string `raw`, unescaped (UTF-8); false when it is not a string. */
bool hl_string(hl_str raw, hl_str *text);
/* hl_get, then hl_string. */
bool hl_get_string(hl_str object, const char *key, hl_str *text);
/* The next member of a JSON object: start with `*members` = the raw object; each call sets
 * `*key` (unescaped) and `*value` (raw) and advances `*members`, false after the last one. */
bool hl_next_member(hl_str *members, hl_str *key, hl_str *value);
/* The raw JSON number `raw` as an unsigned integer; false when it is not one. */
bool hl_u64(hl_str raw, uint64_t *n);
/* The next element of a JSON array: start with `*items` = the raw array; each call sets `*item`
 * to the next element's raw value and advances `*items`, false after the last one. */
bool hl_next(hl_str *items, hl_str *item);

/* ---- Memory and logging -------------------------------------------------------------------- */

/* `n` bytes from the arena (8-aligned), valid until the call returns; NULL when memory is out. */
void *hl_alloc(size_t n);

/* One log line into the plugin's log (`hookline run --verbose` shows it). It imports
 * `hookline.log`: the manifest must ask for the `stdio` capability, else the plugin is not
 * loaded. A plugin that never calls it imports nothing. */
__attribute__((import_module("hookline"), import_name("log"))) void hl_log_import(const char *ptr,
                                                                                   size_t len);
static inline void hl_log(hl_str line) { hl_log_import(line.ptr, line.len); }

#endif
