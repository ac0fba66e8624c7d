;; Hostile: the module asks for more memory at start than the bound allows.
(module
  (memory (export "memory") 65)
  (func (export "run") (param i32) (result i32) (i32.const 0)))
