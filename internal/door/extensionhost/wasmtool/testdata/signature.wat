;; Invalid for buffer-abi/1: the call export takes two parameters.
(module
  (memory (export "memory") 1 1)
  (func (export "run") (param i32 i32) (result i32) (i32.const 0)))
