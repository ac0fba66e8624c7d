;; Hostile: the module imports a host function, which buffer-abi/1 never provides.
(module
  (import "env" "leak" (func $leak (param i32)))
  (memory (export "memory") 1 1)
  (func (export "run") (param $len i32) (result i32)
    (call $leak (local.get $len))
    (i32.const 0)))
