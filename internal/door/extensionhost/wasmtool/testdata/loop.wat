;; Hostile: the call export never returns.
(module
  (memory (export "memory") 1 1)
  (func (export "run") (param i32) (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))
