;; Hostile: the start function, run while the module is instantiated, never returns.
(module
  (memory (export "memory") 1 1)
  (func $start (loop $forever (br $forever)))
  (start $start)
  (func (export "run") (param i32) (result i32) (i32.const 0)))
