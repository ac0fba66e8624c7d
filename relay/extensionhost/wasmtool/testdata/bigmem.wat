;; Hostile: the module asks for more memory at start than the bound allows.
(module
  (memory (export "memory") 64)
  (func (export "run") (param i32) (result i32) (i32.const 0)))
