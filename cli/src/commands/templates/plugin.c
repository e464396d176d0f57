/* {{name}}: a hookline plugin in C, built into plugin.wasm with the hookline WebAssembly kit
 * (hookline.h, hookline.c: the guest ABI of docs/wasm.md). See README.md; run ./build.sh after
 * every change. */
#include "hookline.h"

static const char *const hooks[] = {"on_prompt", "on_tool_call", NULL};
static const hl_tool tools[] = {
    {"word_count", "Counts the words of `text`.", "read", "workspace"},
    {NULL, NULL, NULL, NULL},
};
const hl_hello hl_plugin = {.hooks = hooks, .tools = tools};

/* SPEC P2.2 (docs/spec.md of hookline): a prompt hook may only append. The prompt goes back
 * as it came ("mode" and "text" copied raw), with one more part at the end of "appended". */
static void remind(hl_str prompt) {
    hl_str mode, text, appended, item;
    if (!hl_get(prompt, "mode", &mode) || !hl_get(prompt, "text", &text)) {
        hl_error("the prompt has no mode or text");
        return;
    }
    hl_replace_begin();
    hl_write_raw("{\"mode\":");
    hl_write(mode);
    hl_write_raw(",\"text\":");
    hl_write(text);
    hl_write_raw(",\"appended\":[");
    if (hl_get(prompt, "appended", &appended)) {
        while (hl_next(&appended, &item)) {
            hl_write(item);
            hl_write_raw(",");
        }
    }
    hl_write_cstring("Answer in short sentences.");
    hl_write_raw("]}");
}

/* A tool answers `replace` with {"text": ..., "success": true}. */
static void word_count(hl_str arguments) {
    hl_str text;
    if (!hl_get_string(arguments, "text", &text)) {
        hl_error("word_count needs a string `text` (a WebAssembly plugin reads no files)");
        return;
    }
    uint64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < text.len; i++) {
        char c = text.ptr[i];
        bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        words += !space && !in_word;
        in_word = !space;
    }
    hl_replace_begin();
    hl_write_raw("{\"text\":\"");
    hl_write_u64(words);
    hl_write_raw(" words\",\"success\":true}");
}

void hl_handle(const hl_request *rq) {
    if (hl_eq(rq->type, "hook") && hl_eq(rq->name, "on_prompt"))
        remind(rq->value);
    else if (hl_eq(rq->type, "tool") && hl_eq(rq->name, "word_count"))
        word_count(rq->value);
    /* Anything else (every on_tool_call): returning without a reply keeps the value. */
}
