;; A table with no maximum, grown by a million elements at every call: the relay would allocate
;; the table's backing array without bound (wazero allows up to 2^32 elements).
(module
  (memory (export "memory") 1)
  (table 1 funcref)
  (func (export "run") (param i32) (result i32)
    (drop (table.grow 0 (ref.null func) (i32.const 1048576)))
    (i32.const 0)))
