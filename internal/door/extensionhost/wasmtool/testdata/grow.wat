;; Hostile: the call export grows memory one page at a time, forever, whatever memory.grow answers.
(module
  (memory (export "memory") 1)
  (func (export "run") (param i32) (result i32)
    (loop $more
      (drop (memory.grow (i32.const 1)))
      (br $more))
    (i32.const 0)))
