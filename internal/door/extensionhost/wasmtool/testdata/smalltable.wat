;; A table with a small maximum and an indirect call through it: within the bounds, it runs.
(module
  (memory (export "memory") 1 1)
  (type $len (func (param i32) (result i32)))
  (table 2 2 funcref)
  (elem (i32.const 0) $copy)
  (func $copy (param $n i32) (result i32)
    (memory.copy (i32.const 0x2400) (i32.const 0x400) (local.get $n))
    (local.get $n))
  (func (export "run") (param $n i32) (result i32)
    (call_indirect (type $len) (local.get $n) (i32.const 0))))
