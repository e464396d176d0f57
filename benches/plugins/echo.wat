;; The WebAssembly echo plugin `hookline bench --source wasm` measures: a core module of the guest
;; ABI v1 (docs/wasm.md) doing what the external echo plugins do (benches/plugins/echo.rs, echo.py):
;; `on_user_message` appends " #e" to the message's text, `on_prompt` and `on_tool_call` are kept.
;; Hand-written, so the bench needs no guest toolchain. It reads the request as the host writes it
;; (`{"type":"hook","id":N,"hook":"...","session":"...","value":{...}}`, maybe a `traceparent`
;; after the value) and answers any other request with an `error` reply.
;;
;; Memory: page 0 holds the constant strings; each request is written at 64 KiB and its reply
;; right after it. `hookline_alloc` grows the memory to fit both.
(module
  (memory (export "memory") 2)

  (data (i32.const 16) "{\"type\":\"hello\",\"protocol\":1,\"hooks\":[\"on_user_message\",\"on_prompt\",\"on_tool_call\"]}")
  ;; 84 bytes
  (data (i32.const 128) "\"id\":")                        ;; 5
  (data (i32.const 144) "\"hook\":\"on_user_message\"")   ;; 24
  (data (i32.const 176) "\"value\":")                     ;; 8
  (data (i32.const 192) ",\"traceparent\":")              ;; 15
  (data (i32.const 208) "\"text\":\"")                    ;; 8
  (data (i32.const 224) "{\"type\":\"keep\",\"id\":")     ;; 20
  (data (i32.const 256) "{\"type\":\"replace\",\"id\":")  ;; 23
  (data (i32.const 288) ",\"value\":")                    ;; 9
  (data (i32.const 304) " #e")                            ;; 3
  (data (i32.const 320) "{\"type\":\"error\",\"id\":0,\"message\":\"the echo guest could not read the request\"}") ;; 77

  (global $request i32 (i32.const 65536))
  ;; Where the reply is being written.
  (global $out (mut i32) (i32.const 0))

  (func (export "hookline_abi") (result i32) (i32.const 1))

  (func (export "hookline_hello") (result i64)
    (call $pack (i32.const 16) (i32.const 84)))

  ;; Room for a request of `len` bytes and its reply (at most len + 64 bytes).
  (func (export "hookline_alloc") (param $len i32) (result i32)
    (local $need i32)
    (if (i32.or (i32.lt_s (local.get $len) (i32.const 0))
                (i32.gt_u (local.get $len) (i32.const 0x10000000)))
      (then (return (i32.const 0))))
    (local.set $need
      (i32.add (global.get $request)
        (i32.add (i32.mul (local.get $len) (i32.const 2)) (i32.const 64))))
    (block $fits
      (br_if $fits (i32.le_u (local.get $need) (i32.mul (memory.size) (i32.const 65536))))
      (br_if $fits
        (i32.ne
          (memory.grow
            (i32.sub
              (i32.shr_u (i32.add (local.get $need) (i32.const 65535)) (i32.const 16))
              (memory.size)))
          (i32.const -1)))
      (return (i32.const 0)))
    (global.get $request))

  (func (export "hookline_call") (param $ptr i32) (param $len i32) (result i64)
    (local $end i32) (local $id i32) (local $id_end i32)
    (local $value i32) (local $value_end i32) (local $text i32) (local $quote i32)
    (local $start i32) (local $word i64)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $start (i32.add (local.get $end) (i32.const 16)))
    (global.set $out (local.get $start))
    ;; The id's digits.
    (local.set $id (call $find (local.get $ptr) (local.get $end) (i32.const 128) (i32.const 5)))
    (if (i32.lt_s (local.get $id) (i32.const 0)) (then (return (call $error))))
    (local.set $id (i32.add (local.get $id) (i32.const 5)))
    (local.set $id_end (local.get $id))
    (block $done
      (loop $digits
        (br_if $done (i32.ge_u (local.get $id_end) (local.get $end)))
        (br_if $done (i32.gt_u (i32.sub (i32.load8_u (local.get $id_end)) (i32.const 48)) (i32.const 9)))
        (local.set $id_end (i32.add (local.get $id_end) (i32.const 1)))
        (br $digits)))
    (if (i32.eq (local.get $id) (local.get $id_end)) (then (return (call $error))))
    ;; Any hook but on_user_message: keep. The host writes `,"hook":` right after the id; any
    ;; other order is searched for.
    (if (if (result i32)
          (call $at (i32.add (local.get $id_end) (i32.const 1)) (local.get $end) (i32.const 144) (i32.const 24))
          (then (i32.const 0))
          (else (i32.lt_s (call $find (local.get $ptr) (local.get $end) (i32.const 144) (i32.const 24)) (i32.const 0))))
      (then
        (call $emit (i32.const 224) (i32.const 20))
        (call $emit (local.get $id) (i32.sub (local.get $id_end) (local.get $id)))
        (call $emit_byte (i32.const 125)) ;; }
        (return (call $reply (local.get $start)))))
    ;; on_user_message: the value, up to a traceparent or the request's closing brace.
    ;; After the hook's name (where the host puts it) comes the session, then the value.
    (local.set $value (call $find
      (select (i32.add (local.get $id_end) (i32.const 25)) (local.get $id_end)
        (call $at (i32.add (local.get $id_end) (i32.const 1)) (local.get $end) (i32.const 144) (i32.const 24)))
      (local.get $end) (i32.const 176) (i32.const 8)))
    (if (i32.lt_s (local.get $value) (i32.const 0)) (then (return (call $error))))
    (local.set $value (i32.add (local.get $value) (i32.const 8)))
    ;; Without a traceparent the request ends `}}` (the value's brace, then its own): no search.
    (local.set $value_end (i32.sub (local.get $end) (i32.const 1)))
    (if (i32.ne (i32.load8_u (i32.sub (local.get $end) (i32.const 2))) (i32.const 125))
      (then
        (local.set $value_end (call $find (local.get $value) (local.get $end) (i32.const 192) (i32.const 15)))
        (if (i32.lt_s (local.get $value_end) (i32.const 0))
          (then (local.set $value_end (i32.sub (local.get $end) (i32.const 1)))))))
    ;; The text's closing quote (escapes skipped).
    ;; The text is the value's first field as the host writes it; else it is searched for.
    (local.set $text
      (if (result i32)
        (call $at (i32.add (local.get $value) (i32.const 1)) (local.get $value_end) (i32.const 208) (i32.const 8))
        (then (i32.add (local.get $value) (i32.const 1)))
        (else (call $find (local.get $value) (local.get $value_end) (i32.const 208) (i32.const 8)))))
    (if (i32.lt_s (local.get $text) (i32.const 0)) (then (return (call $error))))
    (local.set $quote (i32.add (local.get $text) (i32.const 8)))
    (block $closed
      (loop $scan
        ;; Eight bytes at a time while none of them is a quote or a backslash.
        (block $near
          (loop $skip
            (br_if $near (i32.gt_u (i32.add (local.get $quote) (i32.const 8)) (local.get $value_end)))
            (local.set $word (i64.load (local.get $quote)))
            (br_if $near
              (i64.ne
                (i64.or
                  (call $has_zero (i64.xor (local.get $word) (i64.const 0x2222222222222222)))
                  (call $has_zero (i64.xor (local.get $word) (i64.const 0x5c5c5c5c5c5c5c5c))))
                (i64.const 0)))
            (local.set $quote (i32.add (local.get $quote) (i32.const 8)))
            (br $skip)))
        (if (i32.ge_u (local.get $quote) (local.get $value_end)) (then (return (call $error))))
        (br_if $closed (i32.eq (i32.load8_u (local.get $quote)) (i32.const 34)))
        (local.set $quote
          (i32.add (local.get $quote)
            (select (i32.const 2) (i32.const 1) (i32.eq (i32.load8_u (local.get $quote)) (i32.const 92)))))
        (br $scan)))
    (call $emit (i32.const 256) (i32.const 23))
    (call $emit (local.get $id) (i32.sub (local.get $id_end) (local.get $id)))
    (call $emit (i32.const 288) (i32.const 9))
    (call $emit (local.get $value) (i32.sub (local.get $quote) (local.get $value)))
    (call $emit (i32.const 304) (i32.const 3))
    (call $emit (local.get $quote) (i32.sub (local.get $value_end) (local.get $quote)))
    (call $emit_byte (i32.const 125))
    (call $reply (local.get $start)))

  ;; Non-zero when one of the eight bytes of `v` is zero.
  (func $has_zero (param $v i64) (result i64)
    (i64.and
      (i64.and (i64.sub (local.get $v) (i64.const 0x0101010101010101))
               (i64.xor (local.get $v) (i64.const -1)))
      (i64.const 0x8080808080808080)))

  ;; Whether `needle` is at `at` (and inside [at, to)).
  (func $at (param $at i32) (param $to i32) (param $needle i32) (param $len i32) (result i32)
    (local $j i32)
    (if (i32.gt_u (i32.add (local.get $at) (local.get $len)) (local.get $to)) (then (return (i32.const 0))))
    (block $differs
      (loop $compare
        (if (i32.eq (local.get $j) (local.get $len)) (then (return (i32.const 1))))
        (br_if $differs
          (i32.ne (i32.load8_u (i32.add (local.get $at) (local.get $j)))
                  (i32.load8_u (i32.add (local.get $needle) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $compare)))
    (i32.const 0))

  ;; The first place of `needle` in [from, to), or -1.
  (func $find (param $from i32) (param $to i32) (param $needle i32) (param $len i32) (result i32)
    (local $i i32) (local $j i32)
    (local.set $i (local.get $from))
    (block $none
      (loop $at
        (br_if $none (i32.gt_u (i32.add (local.get $i) (local.get $len)) (local.get $to)))
        (local.set $j (i32.const 0))
        (block $differs
          (loop $compare
            (if (i32.eq (local.get $j) (local.get $len)) (then (return (local.get $i))))
            (br_if $differs
              (i32.ne (i32.load8_u (i32.add (local.get $i) (local.get $j)))
                      (i32.load8_u (i32.add (local.get $needle) (local.get $j)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $compare)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $at)))
    (i32.const -1))

  (func $emit (param $from i32) (param $len i32)
    (memory.copy (global.get $out) (local.get $from) (local.get $len))
    (global.set $out (i32.add (global.get $out) (local.get $len))))

  (func $emit_byte (param $byte i32)
    (i32.store8 (global.get $out) (local.get $byte))
    (global.set $out (i32.add (global.get $out) (i32.const 1))))

  (func $reply (param $start i32) (result i64)
    (call $pack (local.get $start) (i32.sub (global.get $out) (local.get $start))))

  (func $error (result i64)
    (call $pack (i32.const 320) (i32.const 77)))

  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len))))
)
