;; Hostile: the call export claims more output than the ABI's 32 bytes.
(module
  (memory (export "memory") 1 1)
  (func (export "run") (param i32) (result i32) (i32.const 33)))
