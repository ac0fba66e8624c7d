;; diff: a line diff on buffer-abi/diff, the WASM shelf's diff tool (Hirschberg's algorithm: a
;; longest common subsequence of lines in linear space, so the diff is minimal).
;;
;; The caller writes text A (at most 65536 bytes) at 0x10000 and text B at 0x20000 and calls
;; "diff" with their lengths. The module writes 17-byte blocks at 0x30000 and returns how many
;; bytes it wrote, or -1 when the blocks would pass 262144 bytes or it cannot have the memory it
;; needs. A block is an operation byte (0 equal, 1 delete, 2 insert) and four little-endian
;; uint32: the first line in A, the lines in A, the first line in B, the lines in B, lines counted
;; from 0. Adjacent blocks of one operation are joined.
;;
;; Lines end at "\n" (a last line without one is a line; the newline is not compared). Each line
;; is kept as a 12-byte record (start, length, FNV-1a hash) from 0x70000, then four rows of
;; 4 * (lines of B + 1) bytes for the two LCS sweeps; the memory grows to fit (at most 64 pages:
;; two texts of 65536 one-character lines need about 3 MiB). The time is the product of the two
;; line counts: two texts of 65536 short, all different lines take longer than a host's deadline.
;;
;; Build: wat2wasm diff.wat -o diff.wasm (Debian package wabt).
(module
  (memory (export "memory") 8 64)

  (global $recA (mut i32) (i32.const 0))
  (global $recB (mut i32) (i32.const 0))
  (global $f0 (mut i32) (i32.const 0))
  (global $f1 (mut i32) (i32.const 0))
  (global $r0 (mut i32) (i32.const 0))
  (global $r1 (mut i32) (i32.const 0))
  (global $out (mut i32) (i32.const 0x30000))
  (global $over (mut i32) (i32.const 0))

  ;; lines splits the n bytes at p into line records at rec (none when rec is 0) and returns
  ;; how many lines there are.
  (func $lines (param $p i32) (param $n i32) (param $rec i32) (result i32)
    (local $end i32) (local $s i32) (local $count i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (local.set $s (local.get $p))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 10))
          (then
            (call $record (local.get $rec) (local.get $count) (local.get $s) (i32.sub (local.get $p) (local.get $s)))
            (local.set $count (i32.add (local.get $count) (i32.const 1)))
            (local.set $s (i32.add (local.get $p) (i32.const 1)))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $bytes)))
    (if (i32.lt_u (local.get $s) (local.get $end))
      (then
        (call $record (local.get $rec) (local.get $count) (local.get $s) (i32.sub (local.get $end) (local.get $s)))
        (local.set $count (i32.add (local.get $count) (i32.const 1)))))
    (local.get $count))

  ;; record writes line i of n bytes at s into the records at rec: start, length, FNV-1a hash.
  (func $record (param $rec i32) (param $i i32) (param $s i32) (param $n i32)
    (local $r i32) (local $h i32) (local $k i32)
    (if (i32.eqz (local.get $rec)) (then (return)))
    (local.set $r (i32.add (local.get $rec) (i32.mul (local.get $i) (i32.const 12))))
    (local.set $h (i32.const 0x811c9dc5))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (local.set $h (i32.mul
          (i32.xor (local.get $h) (i32.load8_u (i32.add (local.get $s) (local.get $k))))
          (i32.const 0x01000193)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $bytes)))
    (i32.store (local.get $r) (local.get $s))
    (i32.store offset=4 (local.get $r) (local.get $n))
    (i32.store offset=8 (local.get $r) (local.get $h)))

  ;; eq reports whether line i of A and line j of B are the same.
  (func $eq (param $i i32) (param $j i32) (result i32)
    (local $ra i32) (local $rb i32) (local $n i32) (local $pa i32) (local $pb i32) (local $k i32)
    (local.set $ra (i32.add (global.get $recA) (i32.mul (local.get $i) (i32.const 12))))
    (local.set $rb (i32.add (global.get $recB) (i32.mul (local.get $j) (i32.const 12))))
    (if (i32.ne (i32.load offset=8 (local.get $ra)) (i32.load offset=8 (local.get $rb))) (then (return (i32.const 0))))
    (local.set $n (i32.load offset=4 (local.get $ra)))
    (if (i32.ne (local.get $n) (i32.load offset=4 (local.get $rb))) (then (return (i32.const 0))))
    (local.set $pa (i32.load (local.get $ra)))
    (local.set $pb (i32.load (local.get $rb)))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (if (i32.ne (i32.load8_u (i32.add (local.get $pa) (local.get $k))) (i32.load8_u (i32.add (local.get $pb) (local.get $k))))
          (then (return (i32.const 0))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $bytes)))
    (i32.const 1))

  ;; emit appends a block, or lengthens the last when it is of the same operation and ends where
  ;; this one starts; past the output buffer it sets $over.
  (func $emit (param $op i32) (param $al i32) (param $ac i32) (param $bl i32) (param $bc i32)
    (local $p i32)
    (if (i32.eqz (i32.or (local.get $ac) (local.get $bc))) (then (return)))
    (if (i32.gt_u (global.get $out) (i32.const 0x30000))
      (then
        (local.set $p (i32.sub (global.get $out) (i32.const 17)))
        (if (i32.and
              (i32.eq (i32.load8_u (local.get $p)) (local.get $op))
              (i32.and
                (i32.eq (i32.add (i32.load offset=1 (local.get $p)) (i32.load offset=5 (local.get $p))) (local.get $al))
                (i32.eq (i32.add (i32.load offset=9 (local.get $p)) (i32.load offset=13 (local.get $p))) (local.get $bl))))
          (then
            (i32.store offset=5 (local.get $p) (i32.add (i32.load offset=5 (local.get $p)) (local.get $ac)))
            (i32.store offset=13 (local.get $p) (i32.add (i32.load offset=13 (local.get $p)) (local.get $bc)))
            (return)))))
    (if (i32.gt_u (i32.add (global.get $out) (i32.const 17)) (i32.const 0x70000))
      (then (global.set $over (i32.const 1)) (return)))
    (i32.store8 (global.get $out) (local.get $op))
    (i32.store offset=1 (global.get $out) (local.get $al))
    (i32.store offset=5 (global.get $out) (local.get $ac))
    (i32.store offset=9 (global.get $out) (local.get $bl))
    (i32.store offset=13 (global.get $out) (local.get $bc))
    (global.set $out (i32.add (global.get $out) (i32.const 17))))

  ;; forward returns a row F with F[j] the length of a longest common subsequence of A[a0, a1)
  ;; and B[b0, b0 + j), for j from 0 to b1 - b0. A line of B is compared in full only when its
  ;; hash is the line of A's.
  (func $forward (param $a0 i32) (param $a1 i32) (param $b0 i32) (param $b1 i32) (result i32)
    (local $m i32) (local $prev i32) (local $cur i32) (local $t i32) (local $i i32)
    (local $ha i32) (local $jb i32) (local $pb i32) (local $pp i32) (local $cp i32)
    (local $up i32) (local $left i32) (local $diag i32) (local $v i32)
    (local.set $m (i32.sub (local.get $b1) (local.get $b0)))
    (local.set $prev (global.get $f0))
    (local.set $cur (global.get $f1))
    (memory.fill (local.get $prev) (i32.const 0) (i32.shl (i32.add (local.get $m) (i32.const 1)) (i32.const 2)))
    (local.set $i (local.get $a0))
    (block $rows
      (loop $row
        (br_if $rows (i32.ge_u (local.get $i) (local.get $a1)))
        (local.set $ha (i32.load offset=8 (i32.add (global.get $recA) (i32.mul (local.get $i) (i32.const 12)))))
        (local.set $jb (local.get $b0))
        (local.set $pb (i32.add (global.get $recB) (i32.mul (local.get $b0) (i32.const 12))))
        (local.set $pp (i32.add (local.get $prev) (i32.const 4)))
        (local.set $cp (i32.add (local.get $cur) (i32.const 4)))
        (local.set $left (i32.const 0))
        (local.set $diag (i32.const 0))
        (i32.store (local.get $cur) (i32.const 0))
        (block $cols
          (loop $col
            (br_if $cols (i32.ge_u (local.get $jb) (local.get $b1)))
            (local.set $up (i32.load (local.get $pp)))
            (local.set $v (select (local.get $up) (local.get $left) (i32.gt_u (local.get $up) (local.get $left))))
            (if (i32.eq (i32.load offset=8 (local.get $pb)) (local.get $ha))
              (then
                (if (call $eq (local.get $i) (local.get $jb))
                  (then (local.set $v (i32.add (local.get $diag) (i32.const 1)))))))
            (i32.store (local.get $cp) (local.get $v))
            (local.set $left (local.get $v))
            (local.set $diag (local.get $up))
            (local.set $jb (i32.add (local.get $jb) (i32.const 1)))
            (local.set $pb (i32.add (local.get $pb) (i32.const 12)))
            (local.set $pp (i32.add (local.get $pp) (i32.const 4)))
            (local.set $cp (i32.add (local.get $cp) (i32.const 4)))
            (br $col)))
        (local.set $t (local.get $prev)) (local.set $prev (local.get $cur)) (local.set $cur (local.get $t))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $row)))
    (local.get $prev))

  ;; backward returns a row R with R[j] the length of a longest common subsequence of A[a0, a1)
  ;; and B[b1 - j, b1), for j from 0 to b1 - b0: forward's sweep over both ranges reversed.
  (func $backward (param $a0 i32) (param $a1 i32) (param $b0 i32) (param $b1 i32) (result i32)
    (local $m i32) (local $prev i32) (local $cur i32) (local $t i32) (local $i i32)
    (local $ha i32) (local $jb i32) (local $pb i32) (local $pp i32) (local $cp i32)
    (local $up i32) (local $left i32) (local $diag i32) (local $v i32)
    (local.set $m (i32.sub (local.get $b1) (local.get $b0)))
    (local.set $prev (global.get $r0))
    (local.set $cur (global.get $r1))
    (memory.fill (local.get $prev) (i32.const 0) (i32.shl (i32.add (local.get $m) (i32.const 1)) (i32.const 2)))
    (local.set $i (local.get $a1))
    (block $rows
      (loop $row
        (br_if $rows (i32.le_u (local.get $i) (local.get $a0)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (local.set $ha (i32.load offset=8 (i32.add (global.get $recA) (i32.mul (local.get $i) (i32.const 12)))))
        (local.set $jb (local.get $b1))
        (local.set $pb (i32.add (global.get $recB) (i32.mul (local.get $b1) (i32.const 12))))
        (local.set $pp (i32.add (local.get $prev) (i32.const 4)))
        (local.set $cp (i32.add (local.get $cur) (i32.const 4)))
        (local.set $left (i32.const 0))
        (local.set $diag (i32.const 0))
        (i32.store (local.get $cur) (i32.const 0))
        (block $cols
          (loop $col
            (br_if $cols (i32.le_u (local.get $jb) (local.get $b0)))
            (local.set $jb (i32.sub (local.get $jb) (i32.const 1)))
            (local.set $pb (i32.sub (local.get $pb) (i32.const 12)))
            (local.set $up (i32.load (local.get $pp)))
            (local.set $v (select (local.get $up) (local.get $left) (i32.gt_u (local.get $up) (local.get $left))))
            (if (i32.eq (i32.load offset=8 (local.get $pb)) (local.get $ha))
              (then
                (if (call $eq (local.get $i) (local.get $jb))
                  (then (local.set $v (i32.add (local.get $diag) (i32.const 1)))))))
            (i32.store (local.get $cp) (local.get $v))
            (local.set $left (local.get $v))
            (local.set $diag (local.get $up))
            (local.set $pp (i32.add (local.get $pp) (i32.const 4)))
            (local.set $cp (i32.add (local.get $cp) (i32.const 4)))
            (br $col)))
        (local.set $t (local.get $prev)) (local.set $prev (local.get $cur)) (local.set $cur (local.get $t))
        (br $row)))
    (local.get $prev))

  ;; rec diffs A[a0, a1) against B[b0, b1), emitting its blocks in order.
  (func $rec (param $a0 i32) (param $a1 i32) (param $b0 i32) (param $b1 i32)
    (local $k i32) (local $e1 i32) (local $e2 i32) (local $j i32) (local $found i32)
    (local $mid i32) (local $f i32) (local $r i32) (local $m i32) (local $best i32) (local $kk i32) (local $v i32)
    ;; the common prefix
    (block $pre
      (loop $more
        (br_if $pre (i32.ge_u (local.get $a0) (local.get $a1)))
        (br_if $pre (i32.ge_u (local.get $b0) (local.get $b1)))
        (br_if $pre (i32.eqz (call $eq (local.get $a0) (local.get $b0))))
        (call $emit (i32.const 0) (local.get $a0) (i32.const 1) (local.get $b0) (i32.const 1))
        (local.set $a0 (i32.add (local.get $a0) (i32.const 1)))
        (local.set $b0 (i32.add (local.get $b0) (i32.const 1)))
        (br $more)))
    ;; the common suffix, emitted last
    (block $suf
      (loop $more
        (br_if $suf (i32.ge_u (local.get $a0) (i32.sub (local.get $a1) (local.get $k))))
        (br_if $suf (i32.ge_u (local.get $b0) (i32.sub (local.get $b1) (local.get $k))))
        (br_if $suf (i32.eqz (call $eq
          (i32.sub (i32.sub (local.get $a1) (local.get $k)) (i32.const 1))
          (i32.sub (i32.sub (local.get $b1) (local.get $k)) (i32.const 1)))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $more)))
    (local.set $e1 (i32.sub (local.get $a1) (local.get $k)))
    (local.set $e2 (i32.sub (local.get $b1) (local.get $k)))
    (if (i32.eq (local.get $a0) (local.get $e1))
      (then
        (call $emit (i32.const 2) (local.get $a0) (i32.const 0) (local.get $b0) (i32.sub (local.get $e2) (local.get $b0))))
      (else (if (i32.eq (local.get $b0) (local.get $e2))
        (then
          (call $emit (i32.const 1) (local.get $a0) (i32.sub (local.get $e1) (local.get $a0)) (local.get $b0) (i32.const 0)))
        (else (if (i32.eq (i32.sub (local.get $e1) (local.get $a0)) (i32.const 1))
          (then
            ;; one line of A: where, if anywhere, it is in B
            (local.set $found (i32.const -1))
            (local.set $j (local.get $b0))
            (block $search
              (loop $next
                (br_if $search (i32.ge_u (local.get $j) (local.get $e2)))
                (if (call $eq (local.get $a0) (local.get $j))
                  (then (local.set $found (local.get $j)) (br $search)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $next)))
            (if (i32.lt_s (local.get $found) (i32.const 0))
              (then
                (call $emit (i32.const 1) (local.get $a0) (i32.const 1) (local.get $b0) (i32.const 0))
                (call $emit (i32.const 2) (local.get $e1) (i32.const 0) (local.get $b0) (i32.sub (local.get $e2) (local.get $b0))))
              (else
                (call $emit (i32.const 2) (local.get $a0) (i32.const 0) (local.get $b0) (i32.sub (local.get $found) (local.get $b0)))
                (call $emit (i32.const 0) (local.get $a0) (i32.const 1) (local.get $found) (i32.const 1))
                (call $emit (i32.const 2) (local.get $e1) (i32.const 0) (i32.add (local.get $found) (i32.const 1))
                  (i32.sub (i32.sub (local.get $e2) (local.get $found)) (i32.const 1))))))
          (else
            ;; split A in half and B where the two halves' common subsequences sum highest
            (local.set $mid (i32.shr_u (i32.add (local.get $a0) (local.get $e1)) (i32.const 1)))
            (local.set $m (i32.sub (local.get $e2) (local.get $b0)))
            (local.set $f (call $forward (local.get $a0) (local.get $mid) (local.get $b0) (local.get $e2)))
            (local.set $r (call $backward (local.get $mid) (local.get $e1) (local.get $b0) (local.get $e2)))
            (local.set $best (i32.const -1))
            (local.set $j (i32.const 0))
            (block $split
              (loop $next
                (br_if $split (i32.gt_u (local.get $j) (local.get $m)))
                (local.set $v (i32.add
                  (i32.load (i32.add (local.get $f) (i32.shl (local.get $j) (i32.const 2))))
                  (i32.load (i32.add (local.get $r) (i32.shl (i32.sub (local.get $m) (local.get $j)) (i32.const 2))))))
                (if (i32.gt_s (local.get $v) (local.get $best))
                  (then (local.set $best (local.get $v)) (local.set $kk (local.get $j))))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $next)))
            (call $rec (local.get $a0) (local.get $mid) (local.get $b0) (i32.add (local.get $b0) (local.get $kk)))
            (call $rec (local.get $mid) (local.get $e1) (i32.add (local.get $b0) (local.get $kk)) (local.get $e2))))))))
    (call $emit (i32.const 0) (local.get $e1) (local.get $k) (local.get $e2) (local.get $k)))

  (func (export "diff") (param $la i32) (param $lb i32) (result i32)
    (local $na i32) (local $nb i32) (local $row i32) (local $need i32) (local $pages i32)
    (if (i32.or (i32.gt_u (local.get $la) (i32.const 65536)) (i32.gt_u (local.get $lb) (i32.const 65536)))
      (then (return (i32.const -1))))
    (global.set $out (i32.const 0x30000))
    (global.set $over (i32.const 0))
    (local.set $na (call $lines (i32.const 0x10000) (local.get $la) (i32.const 0)))
    (local.set $nb (call $lines (i32.const 0x20000) (local.get $lb) (i32.const 0)))
    (global.set $recA (i32.const 0x70000))
    (global.set $recB (i32.add (global.get $recA) (i32.mul (local.get $na) (i32.const 12))))
    (local.set $row (i32.shl (i32.add (local.get $nb) (i32.const 1)) (i32.const 2)))
    (global.set $f0 (i32.add (global.get $recB) (i32.mul (local.get $nb) (i32.const 12))))
    (global.set $f1 (i32.add (global.get $f0) (local.get $row)))
    (global.set $r0 (i32.add (global.get $f1) (local.get $row)))
    (global.set $r1 (i32.add (global.get $r0) (local.get $row)))
    (local.set $need (i32.add (global.get $r1) (local.get $row)))
    (local.set $pages (i32.shr_u (i32.add (local.get $need) (i32.const 0xffff)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const -1))))))
    (drop (call $lines (i32.const 0x10000) (local.get $la) (global.get $recA)))
    (drop (call $lines (i32.const 0x20000) (local.get $lb) (global.get $recB)))
    (call $rec (i32.const 0) (local.get $na) (i32.const 0) (local.get $nb))
    (if (global.get $over) (then (return (i32.const -1))))
    (i32.sub (global.get $out) (i32.const 0x30000))))
