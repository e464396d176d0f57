/* The plugin the kit's tests build and drive through the ABI (sdk/tests/wasm_abi.py); the Zig
 * kit's test plugin does the same. */
#include "hookline.h"

static const char *const hooks[] = {"on_prompt", "on_user_message", "on_tool_call", NULL};
static const char *const raw_hooks[] = {"rewrite_prompt", NULL};
static const char *const events[] = {"command:new", NULL};
static const hl_tool tools[] = {
    {"kit_echo", "Echoes its text with the session.", NULL, NULL},
    {"kit_fail", "Always fails.", "write", "host"},
    {NULL, NULL, NULL, NULL},
};
const hl_hello hl_plugin = {hooks, raw_hooks, events, tools};

/* The value with `text` replaced by its text and `suffix`; every other member as it was. */
static void append_to_text(hl_str value, const char *suffix) {
    hl_str members = value, key, member;
    bool first = true;
    hl_replace_begin();
    hl_write(HL_STR("{"));
    while (hl_next_member(&members, &key, &member)) {
        if (!first)
            hl_write(HL_STR(","));
        first = false;
        hl_write_string(key);
        hl_write(HL_STR(":"));
        hl_str text;
        if (hl_eq(key, "text") && hl_string(member, &text)) {
            char *joined = hl_alloc(text.len + 64);
            size_t n = 0;
            if (!joined) {
                hl_error("out of memory");
                return;
            }
            for (size_t i = 0; i < text.len; i++)
                joined[n++] = text.ptr[i];
            for (const char *s = suffix; *s; s++)
                joined[n++] = *s;
            hl_write_string((hl_str){joined, n});
        } else {
            hl_write(member);
        }
    }
    hl_write(HL_STR("}"));
}

/* The prompt with one more part: "mode" and "text" as they were, "appended" with `part` last. */
static void append_part(hl_str prompt, const char *part) {
    hl_str mode, text, appended, items, item;
    if (!hl_get(prompt, "mode", &mode) || !hl_get(prompt, "text", &text)) {
        hl_error("the prompt has no mode or text");
        return;
    }
    hl_replace_begin();
    hl_write(HL_STR("{\"mode\":"));
    hl_write(mode);
    hl_write(HL_STR(",\"text\":"));
    hl_write(text);
    hl_write(HL_STR(",\"appended\":["));
    if (hl_get(prompt, "appended", &appended)) {
        items = appended;
        while (hl_next(&items, &item)) {
            hl_write(item);
            hl_write(HL_STR(","));
        }
    }
    hl_write_cstring(part);
    hl_write(HL_STR("]}"));
}

void hl_handle(const hl_request *rq) {
    if (hl_eq(rq->type, "hook")) {
        if (hl_eq(rq->name, "on_prompt"))
            append_part(rq->value, "Kit rules.");
        else if (hl_eq(rq->name, "on_user_message"))
            append_to_text(rq->value, " [kit]");
        else if (hl_eq(rq->name, "rewrite_prompt"))
            append_to_text(rq->value, "\nKit rules.");
        return; /* on_tool_call: keep */
    }
    if (hl_eq(rq->type, "tool")) {
        hl_str text;
        if (hl_eq(rq->name, "kit_fail")) {
            hl_error("kit_fail always fails");
            return;
        }
        if (!hl_get_string(rq->value, "text", &text))
            text = HL_STR("");
        hl_replace_begin();
        hl_write(HL_STR("{\"text\":"));
        char *joined = hl_alloc(text.len + 6 + rq->session.len);
        if (!joined) {
            hl_error("out of memory");
            return;
        }
        size_t n = 0;
        for (size_t i = 0; i < text.len; i++)
            joined[n++] = text.ptr[i];
        for (const char *s = " from "; *s; s++)
            joined[n++] = *s;
        for (size_t i = 0; i < rq->session.len; i++)
            joined[n++] = rq->session.ptr[i];
        hl_write_string((hl_str){joined, n});
        hl_write(HL_STR(",\"success\":true}"));
    }
    /* events: keep */
}
