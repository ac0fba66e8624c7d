;; Well behaved. "run" copies up to 32 input bytes to the output and returns how many; "fill" has
;; no result, so the relay reads all 32 output bytes: 32 copies of the first input byte.
(module
  (memory (export "memory") 1 1)
  (func (export "run") (param $len i32) (result i32)
    (local $n i32)
    (local.set $n (select (local.get $len) (i32.const 32) (i32.lt_u (local.get $len) (i32.const 32))))
    (memory.copy (i32.const 0x2400) (i32.const 0x400) (local.get $n))
    (local.get $n))
  (func (export "fill") (param $len i32)
    (memory.fill (i32.const 0x2400) (i32.load8_u (i32.const 0x400)) (i32.const 32))))
