;; A table that starts with a million elements: eight megabytes at every instantiation.
(module
  (memory (export "memory") 1)
  (table 1048576 1048576 funcref)
  (func (export "run") (param i32) (result i32)
    (i32.const 0)))
