//! hookline.zig: the hookline WebAssembly kit for Zig (the core-module guest ABI, version 1:
//! docs/wasm.md in the hookline repository). Written for Zig 0.17 (the PyPI `ziglang` wheel).
//!
//! A plugin is a root source file that declares its hello and handler and exports the ABI:
//!
//!     const hookline = @import("hookline.zig");
//!     pub const hello: hookline.Hello = .{ .hooks = &.{"on_prompt"} };
//!     pub fn handle(rq: *const hookline.Request) !hookline.Reply { return .keep; }
//!     comptime { hookline.exportPlugin(@This()); }
//!
//! built with no WASI for `wasm32-freestanding`:
//!
//!     python3 -m ziglang build-exe plugin.zig -target wasm32-freestanding -fno-entry \
//!         -O ReleaseSmall --export=hookline_abi --export=hookline_alloc \
//!         --export=hookline_hello --export=hookline_call -femit-bin=plugin.wasm
//!
//! The module exports exactly the ABI (`memory`, `hookline_abi`, `hookline_alloc`,
//! `hookline_hello`, `hookline_call`) and imports nothing unless the plugin calls `log` (which
//! imports `hookline.log`, granted by the `stdio` capability). Requests and replies are the
//! protocol's JSON (docs/protocol.md), parsed and written with `std.json`. Everything a call
//! allocates lives in one arena that is reset when the host asks for room for the next request.

const std = @import("std");

pub const Tool = struct {
    name: []const u8,
    description: []const u8 = "",
    /// "read", "write", "execute" or "critical".
    risk: []const u8 = "read",
    /// "workspace" or "host".
    authority: []const u8 = "workspace",
};

/// The plugin's hello (the kit adds `"type": "hello"` and `"protocol": 1`).
pub const Hello = struct {
    hooks: []const []const u8 = &.{},
    raw_hooks: []const []const u8 = &.{},
    events: []const []const u8 = &.{},
    tools: []const Tool = &.{},
};

pub const Kind = enum { hook, tool, event };

/// One request, decoded.
pub const Request = struct {
    kind: Kind,
    /// The request's id; the kit puts it in the reply.
    id: u64,
    /// The hook's wire name, the tool's name or the event's key.
    name: []const u8,
    /// The hook's value, the tool's arguments or the event's context.
    value: std.json.Value,
    /// Hooks and tools: the session id; "" for events.
    session: []const u8,
    /// Tools: the workspace root and the approval mode at the time of the call; "" otherwise.
    workspace_root: []const u8,
    approval_mode: []const u8,
    /// The whole request, as the host sent it.
    raw: []const u8,
    /// The call's arena: everything allocated from it is freed when the next request comes.
    arena: std.mem.Allocator,

    /// A `replace` reply carrying `value` (any value `std.json.Stringify` writes: a
    /// `std.json.Value`, a struct, a slice...).
    pub fn replace(rq: *const Request, value: anytype) !Reply {
        return .{ .replace = try std.json.Stringify.valueAlloc(rq.arena, value, .{}) };
    }

    /// A tool's `replace` reply: `{"text": text, "success": success}`.
    pub fn toolResult(rq: *const Request, text: []const u8, success: bool) !Reply {
        return rq.replace(.{ .text = text, .success = success });
    }
};

/// What a handler answers. An error returned by the handler is an `error` reply naming it.
pub const Reply = union(enum) {
    /// Keep the value.
    keep,
    /// The replacement, as JSON text (`Request.replace` writes one).
    replace: []const u8,
    /// Skip the hook with this message as its note.
    fail: []const u8,
};

/// One log line into the plugin's log (`hookline run --verbose` shows it). It imports
/// `hookline.log`: the manifest must ask for the `stdio` capability, else the plugin is not
/// loaded. A plugin that never calls it imports nothing.
pub fn log(line: []const u8) void {
    const imported = struct {
        extern "hookline" fn log(ptr: [*]const u8, len: usize) void;
    };
    imported.log(line.ptr, line.len);
}

// ---- The exports ---------------------------------------------------------------------------

var arena_state = std.heap.ArenaAllocator.init(std.heap.wasm_allocator);

/// `ptr << 32 | len`, as the ABI returns guest memory.
fn pack(bytes: []const u8) i64 {
    return @bitCast(@as(u64, @intFromPtr(bytes.ptr)) << 32 | bytes.len);
}

/// The wire form of a request: the fields of every kind, the others ignored.
const Wire = struct {
    type: []const u8,
    id: u64,
    hook: ?[]const u8 = null,
    tool: ?[]const u8 = null,
    key: ?[]const u8 = null,
    session: ?[]const u8 = null,
    workspace_root: ?[]const u8 = null,
    approval_mode: ?[]const u8 = null,
    value: ?std.json.Value = null,
    arguments: ?std.json.Value = null,
    context: ?std.json.Value = null,
};

fn decode(arena: std.mem.Allocator, raw: []const u8) error{ OutOfMemory, Invalid }!Request {
    // Numbers stay as their text (`.number_string`): a value goes back exactly as it came.
    const options: std.json.ParseOptions = .{ .ignore_unknown_fields = true, .parse_numbers = false };
    const wire = std.json.parseFromSliceLeaky(Wire, arena, raw, options) catch |err| switch (err) {
        error.OutOfMemory => return error.OutOfMemory,
        else => return error.Invalid,
    };
    const kind = std.meta.stringToEnum(Kind, wire.type) orelse return error.Invalid;
    const name, const value = switch (kind) {
        .hook => .{ wire.hook, wire.value },
        .tool => .{ wire.tool, wire.arguments },
        .event => .{ wire.key, wire.context },
    };
    if (name == null or value == null or (kind != .event and wire.session == null))
        return error.Invalid;
    return .{
        .kind = kind,
        .id = wire.id,
        .name = name.?,
        .value = value.?,
        .session = wire.session orelse "",
        .workspace_root = wire.workspace_root orelse "",
        .approval_mode = wire.approval_mode orelse "",
        .raw = raw,
        .arena = arena,
    };
}

/// The id of a request that did not decode, read up to the first fault (the host writes `id`
/// before the value, so a bad value still gets its error under its id); else 0.
fn idOf(arena: std.mem.Allocator, raw: []const u8) u64 {
    var scanner = std.json.Scanner.initCompleteInput(arena, raw);
    if ((scanner.next() catch return 0) != .object_begin) return 0;
    while (true) {
        const key = switch (scanner.nextAlloc(arena, .alloc_if_needed) catch return 0) {
            .string, .allocated_string => |key| key,
            else => return 0,
        };
        if (std.mem.eql(u8, key, "id")) return switch (scanner.next() catch return 0) {
            .number => |n| std.fmt.parseInt(u64, n, 10) catch 0,
            else => 0,
        };
        scanner.skipValue() catch return 0;
    }
}

fn reply(arena: std.mem.Allocator, id: u64, answer: Reply) ![]const u8 {
    return switch (answer) {
        .keep => std.fmt.allocPrint(arena, "{{\"type\":\"keep\",\"id\":{d}}}", .{id}),
        .replace => |json| std.fmt.allocPrint(
            arena,
            "{{\"type\":\"replace\",\"id\":{d},\"value\":{s}}}",
            .{ id, json },
        ),
        .fail => |message| std.json.Stringify.valueAlloc(
            arena,
            .{ .type = "error", .id = id, .message = message },
            .{},
        ),
    };
}

/// Exports the ABI for `Plugin`, a namespace with `pub const hello: Hello` and
/// `pub fn handle(rq: *const Request) !Reply`. Call it in a `comptime` block of the root file.
pub fn exportPlugin(comptime Plugin: type) void {
    const abi = struct {
        fn abi() callconv(.c) i32 {
            return 1;
        }

        fn alloc(len: i32) callconv(.c) i32 {
            _ = arena_state.reset(.retain_capacity);
            if (len < 0) return 0;
            const bytes = arena_state.allocator().alloc(u8, @intCast(len)) catch return 0;
            return @intCast(@intFromPtr(bytes.ptr));
        }

        fn hello() callconv(.c) i64 {
            _ = arena_state.reset(.retain_capacity);
            const h: Hello = Plugin.hello;
            const json = std.json.Stringify.valueAlloc(arena_state.allocator(), .{
                .type = "hello",
                .protocol = 1,
                .hooks = h.hooks,
                .raw_hooks = h.raw_hooks,
                .events = h.events,
                .tools = h.tools,
            }, .{}) catch return pack(
                // Not a hello: the host refuses to load the plugin, with a note.
                \\{"type":"error","id":0,"message":"the plugin ran out of memory"}
            );
            return pack(json);
        }

        fn call(ptr: i32, len: i32) callconv(.c) i64 {
            const arena = arena_state.allocator();
            const raw = @as([*]const u8, @ptrFromInt(@as(usize, @intCast(ptr))))[0..@intCast(len)];
            var id: u64 = 0;
            const answer: Reply = if (decode(arena, raw)) |rq| answer: {
                id = rq.id;
                break :answer Plugin.handle(&rq) catch |err| .{ .fail = @errorName(err) };
            } else |err| answer: {
                id = idOf(arena, raw);
                break :answer .{ .fail = switch (err) {
                    error.OutOfMemory => "the plugin ran out of memory",
                    error.Invalid => "the request is not a protocol request",
                } };
            };
            const json = reply(arena, id, answer) catch oom: {
                // Nothing left to write a reply with: a fixed one, in static memory.
                const S = struct {
                    var fixed: [96]u8 = undefined;
                };
                const text = "{{\"type\":\"error\",\"id\":{d},\"message\":\"the plugin ran out of memory\"}}";
                break :oom std.fmt.bufPrint(&S.fixed, text, .{id}) catch unreachable;
            };
            return pack(json);
        }
    };
    @export(&abi.abi, .{ .name = "hookline_abi" });
    @export(&abi.alloc, .{ .name = "hookline_alloc" });
    @export(&abi.hello, .{ .name = "hookline_hello" });
    @export(&abi.call, .{ .name = "hookline_call" });
}
