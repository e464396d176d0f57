//! {{name}}: a hookline plugin in Zig, built into plugin.wasm with the hookline WebAssembly kit
//! (hookline.zig: the guest ABI of docs/wasm.md). See README.md; run ./build.sh after every
//! change.
const std = @import("std");
const hookline = @import("hookline.zig");

pub const hello: hookline.Hello = .{
    .hooks = &.{ "on_prompt", "on_tool_call" },
    .tools = &.{.{ .name = "word_count", .description = "Counts the words of `text`." }},
};

pub fn handle(rq: *const hookline.Request) !hookline.Reply {
    switch (rq.kind) {
        .hook => if (std.mem.eql(u8, rq.name, "on_prompt")) return remind(rq),
        .tool => if (std.mem.eql(u8, rq.name, "word_count")) return wordCount(rq),
        .event => {},
    }
    // Anything else (every on_tool_call): keep the value.
    return .keep;
}

/// SPEC P2.2 (docs/spec.md of hookline): a prompt hook may only append. The prompt goes back
/// as it came, with one more part at the end of "appended".
fn remind(rq: *const hookline.Request) !hookline.Reply {
    var prompt = rq.value;
    if (prompt != .object) return .{ .fail = "the prompt is not an object" };
    const appended = try prompt.object.getOrPut(rq.arena, "appended");
    if (!appended.found_existing or appended.value_ptr.* != .array)
        appended.value_ptr.* = .{ .array = .init(rq.arena) };
    try appended.value_ptr.array.append(.{ .string = "Answer in short sentences." });
    return rq.replace(prompt);
}

/// A tool answers `replace` with {"text": ..., "success": true}.
fn wordCount(rq: *const hookline.Request) !hookline.Reply {
    const text = if (rq.value == .object) rq.value.object.get("text") else null;
    if (text == null or text.? != .string)
        return .{ .fail = "word_count needs a string `text` (a WebAssembly plugin reads no files)" };
    var words: usize = 0;
    var it = std.mem.tokenizeAny(u8, text.?.string, " \t\r\n");
    while (it.next() != null) words += 1;
    return rq.toolResult(try std.fmt.allocPrint(rq.arena, "{d} words", .{words}), true);
}

comptime {
    hookline.exportPlugin(@This());
}
