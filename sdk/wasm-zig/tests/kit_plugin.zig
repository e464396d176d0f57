//! The plugin the kit's tests build and drive through the ABI (sdk/tests/wasm_abi.py); it
//! behaves as the C kit's test plugin does.
const std = @import("std");
const hookline = @import("hookline.zig"); // beside this file, as in a plugin directory

pub const hello: hookline.Hello = .{
    .hooks = &.{ "on_prompt", "on_user_message", "on_tool_call" },
    .raw_hooks = &.{"rewrite_prompt"},
    .events = &.{"command:new"},
    .tools = &.{
        .{ .name = "kit_echo", .description = "Echoes its text with the session." },
        .{ .name = "kit_fail", .description = "Always fails.", .risk = "write", .authority = "host" },
    },
};

/// The value with `suffix` after its `text`.
fn appendToText(rq: *const hookline.Request, suffix: []const u8) !hookline.Reply {
    var value = rq.value;
    if (value != .object) return .{ .fail = "the value is not an object" };
    const text = value.object.getPtr("text") orelse return .{ .fail = "the value has no text" };
    if (text.* != .string) return .{ .fail = "the value's text is not a string" };
    text.* = .{ .string = try std.mem.concat(rq.arena, u8, &.{ text.string, suffix }) };
    return rq.replace(value);
}

pub fn handle(rq: *const hookline.Request) !hookline.Reply {
    switch (rq.kind) {
        .hook => {
            if (std.mem.eql(u8, rq.name, "on_prompt")) {
                var prompt = rq.value;
                if (prompt != .object or prompt.object.get("mode") == null or prompt.object.get("text") == null)
                    return .{ .fail = "the prompt has no mode or text" };
                const appended = try prompt.object.getOrPut(rq.arena, "appended");
                if (!appended.found_existing or appended.value_ptr.* != .array)
                    appended.value_ptr.* = .{ .array = .init(rq.arena) };
                try appended.value_ptr.array.append(.{ .string = "Kit rules." });
                return rq.replace(prompt);
            }
            if (std.mem.eql(u8, rq.name, "on_user_message")) return appendToText(rq, " [kit]");
            if (std.mem.eql(u8, rq.name, "rewrite_prompt")) return appendToText(rq, "\nKit rules.");
            return .keep; // on_tool_call
        },
        .tool => {
            if (std.mem.eql(u8, rq.name, "kit_fail")) return .{ .fail = "kit_fail always fails" };
            const text = switch (rq.value) {
                .object => |arguments| if (arguments.get("text")) |t| switch (t) {
                    .string => |s| s,
                    else => "",
                } else "",
                else => "",
            };
            return rq.toolResult(try std.fmt.allocPrint(rq.arena, "{s} from {s}", .{ text, rq.session }), true);
        },
        .event => return .keep,
    }
}

comptime {
    hookline.exportPlugin(@This());
}
