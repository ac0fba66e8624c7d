;; hash: SHA-256 on buffer-abi/1, the WASM shelf's hash tool.
;;
;; The caller writes at most 8192 input bytes at 0x400 and calls "sha256" with their length; the
;; module writes the 32-byte digest at 0x2400 and returns 32, or returns -1 for a longer input.
;; "abc" gives ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.
;;
;; Memory (one page, never grown): the padded message is built at 0x3000 (at most 8192 + 72
;; bytes), the round constants sit at 0x6000 and the message schedule at 0x6100.
;;
;; Build: wat2wasm hash.wat -o hash.wasm (Debian package wabt).
(module
  (memory (export "memory") 1 1)

  (data (i32.const 0x6000)
    "\98\2f\8a\42\91\44\37\71\cf\fb\c0\b5\a5\db\b5\e9\5b\c2\56\39\f1\11\f1\59\a4\82\3f\92\d5\5e\1c\ab"
    "\98\aa\07\d8\01\5b\83\12\be\85\31\24\c3\7d\0c\55\74\5d\be\72\fe\b1\de\80\a7\06\dc\9b\74\f1\9b\c1"
    "\c1\69\9b\e4\86\47\be\ef\c6\9d\c1\0f\cc\a1\0c\24\6f\2c\e9\2d\aa\84\74\4a\dc\a9\b0\5c\da\88\f9\76"
    "\52\51\3e\98\6d\c6\31\a8\c8\27\03\b0\c7\7f\59\bf\f3\0b\e0\c6\47\91\a7\d5\51\63\ca\06\67\29\29\14"
    "\85\0a\b7\27\38\21\1b\2e\fc\6d\2c\4d\13\0d\38\53\54\73\0a\65\bb\0a\6a\76\2e\c9\c2\81\85\2c\72\92"
    "\a1\e8\bf\a2\4b\66\1a\a8\70\8b\4b\c2\a3\51\6c\c7\19\e8\92\d1\24\06\99\d6\85\35\0e\f4\70\a0\6a\10"
    "\16\c1\a4\19\08\6c\37\1e\4c\77\48\27\b5\bc\b0\34\b3\0c\1c\39\4a\aa\d8\4e\4f\ca\9c\5b\f3\6f\2e\68"
    "\ee\82\8f\74\6f\63\a5\78\14\78\c8\84\08\02\c7\8c\fa\ff\be\90\eb\6c\50\a4\f7\a3\f9\be\f2\78\71\c6")

  ;; be32 reads the big-endian 32-bit word at p.
  (func $be32 (param $p i32) (result i32)
    (i32.or
      (i32.or
        (i32.shl (i32.load8_u (local.get $p)) (i32.const 24))
        (i32.shl (i32.load8_u offset=1 (local.get $p)) (i32.const 16)))
      (i32.or
        (i32.shl (i32.load8_u offset=2 (local.get $p)) (i32.const 8))
        (i32.load8_u offset=3 (local.get $p)))))

  ;; put32 writes v big-endian at p.
  (func $put32 (param $p i32) (param $v i32)
    (i32.store8 (local.get $p) (i32.shr_u (local.get $v) (i32.const 24)))
    (i32.store8 offset=1 (local.get $p) (i32.shr_u (local.get $v) (i32.const 16)))
    (i32.store8 offset=2 (local.get $p) (i32.shr_u (local.get $v) (i32.const 8)))
    (i32.store8 offset=3 (local.get $p) (local.get $v)))

  (func (export "sha256") (param $len i32) (result i32)
    (local $total i32) (local $blk i32) (local $t i32) (local $w i32)
    (local $a i32) (local $b i32) (local $c i32) (local $d i32)
    (local $e i32) (local $f i32) (local $g i32) (local $h i32)
    (local $h0 i32) (local $h1 i32) (local $h2 i32) (local $h3 i32)
    (local $h4 i32) (local $h5 i32) (local $h6 i32) (local $h7 i32)
    (local $t1 i32) (local $t2 i32)
    (if (i32.gt_u (local.get $len) (i32.const 8192)) (then (return (i32.const -1))))

    ;; The padded message: the input, 0x80, zeros, and the length in bits (big-endian, 64 bits).
    (memory.copy (i32.const 0x3000) (i32.const 0x400) (local.get $len))
    (i32.store8 offset=0x3000 (local.get $len) (i32.const 0x80))
    (local.set $total
      (i32.mul (i32.add (i32.div_u (i32.add (local.get $len) (i32.const 8)) (i32.const 64)) (i32.const 1)) (i32.const 64)))
    (memory.fill
      (i32.add (i32.const 0x3001) (local.get $len))
      (i32.const 0)
      (i32.sub (i32.sub (local.get $total) (i32.const 8)) (i32.add (local.get $len) (i32.const 1))))
    (i32.store offset=0x2ff8 (local.get $total) (i32.const 0))
    (call $put32 (i32.add (i32.const 0x2ffc) (local.get $total)) (i32.shl (local.get $len) (i32.const 3)))

    (local.set $h0 (i32.const 0x6a09e667)) (local.set $h1 (i32.const 0xbb67ae85))
    (local.set $h2 (i32.const 0x3c6ef372)) (local.set $h3 (i32.const 0xa54ff53a))
    (local.set $h4 (i32.const 0x510e527f)) (local.set $h5 (i32.const 0x9b05688c))
    (local.set $h6 (i32.const 0x1f83d9ab)) (local.set $h7 (i32.const 0x5be0cd19))

    (local.set $blk (i32.const 0))
    (loop $blocks
      ;; The schedule: sixteen words of the block, then forty-eight more.
      (local.set $t (i32.const 0))
      (loop $load
        (i32.store offset=0x6100 (i32.shl (local.get $t) (i32.const 2))
          (call $be32 (i32.add (i32.add (i32.const 0x3000) (local.get $blk)) (i32.shl (local.get $t) (i32.const 2)))))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br_if $load (i32.lt_u (local.get $t) (i32.const 16))))
      (loop $extend
        (local.set $w (i32.shl (local.get $t) (i32.const 2)))
        ;; w[t] = s1(w[t-2]) + w[t-7] + s0(w[t-15]) + w[t-16]
        (local.set $t1 (i32.load offset=0x60f8 (local.get $w)))
        (local.set $t2 (i32.load offset=0x60c4 (local.get $w)))
        (i32.store offset=0x6100 (local.get $w)
          (i32.add
            (i32.add
              (i32.xor (i32.xor (i32.rotr (local.get $t1) (i32.const 17)) (i32.rotr (local.get $t1) (i32.const 19)))
                (i32.shr_u (local.get $t1) (i32.const 10)))
              (i32.load offset=0x60e4 (local.get $w)))
            (i32.add
              (i32.xor (i32.xor (i32.rotr (local.get $t2) (i32.const 7)) (i32.rotr (local.get $t2) (i32.const 18)))
                (i32.shr_u (local.get $t2) (i32.const 3)))
              (i32.load offset=0x60c0 (local.get $w)))))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br_if $extend (i32.lt_u (local.get $t) (i32.const 64))))

      (local.set $a (local.get $h0)) (local.set $b (local.get $h1))
      (local.set $c (local.get $h2)) (local.set $d (local.get $h3))
      (local.set $e (local.get $h4)) (local.set $f (local.get $h5))
      (local.set $g (local.get $h6)) (local.set $h (local.get $h7))
      (local.set $t (i32.const 0))
      (loop $rounds
        (local.set $w (i32.shl (local.get $t) (i32.const 2)))
        ;; t1 = h + S1(e) + ch(e, f, g) + k[t] + w[t]
        (local.set $t1
          (i32.add
            (i32.add (local.get $h)
              (i32.xor (i32.xor (i32.rotr (local.get $e) (i32.const 6)) (i32.rotr (local.get $e) (i32.const 11)))
                (i32.rotr (local.get $e) (i32.const 25))))
            (i32.add
              (i32.xor (i32.and (local.get $e) (local.get $f))
                (i32.and (i32.xor (local.get $e) (i32.const -1)) (local.get $g)))
              (i32.add (i32.load offset=0x6000 (local.get $w)) (i32.load offset=0x6100 (local.get $w))))))
        ;; t2 = S0(a) + maj(a, b, c)
        (local.set $t2
          (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $a) (i32.const 2)) (i32.rotr (local.get $a) (i32.const 13)))
              (i32.rotr (local.get $a) (i32.const 22)))
            (i32.xor (i32.xor (i32.and (local.get $a) (local.get $b)) (i32.and (local.get $a) (local.get $c)))
              (i32.and (local.get $b) (local.get $c)))))
        (local.set $h (local.get $g)) (local.set $g (local.get $f)) (local.set $f (local.get $e))
        (local.set $e (i32.add (local.get $d) (local.get $t1)))
        (local.set $d (local.get $c)) (local.set $c (local.get $b)) (local.set $b (local.get $a))
        (local.set $a (i32.add (local.get $t1) (local.get $t2)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br_if $rounds (i32.lt_u (local.get $t) (i32.const 64))))

      (local.set $h0 (i32.add (local.get $h0) (local.get $a))) (local.set $h1 (i32.add (local.get $h1) (local.get $b)))
      (local.set $h2 (i32.add (local.get $h2) (local.get $c))) (local.set $h3 (i32.add (local.get $h3) (local.get $d)))
      (local.set $h4 (i32.add (local.get $h4) (local.get $e))) (local.set $h5 (i32.add (local.get $h5) (local.get $f)))
      (local.set $h6 (i32.add (local.get $h6) (local.get $g))) (local.set $h7 (i32.add (local.get $h7) (local.get $h)))
      (local.set $blk (i32.add (local.get $blk) (i32.const 64)))
      (br_if $blocks (i32.lt_u (local.get $blk) (local.get $total))))

    (call $put32 (i32.const 0x2400) (local.get $h0)) (call $put32 (i32.const 0x2404) (local.get $h1))
    (call $put32 (i32.const 0x2408) (local.get $h2)) (call $put32 (i32.const 0x240c) (local.get $h3))
    (call $put32 (i32.const 0x2410) (local.get $h4)) (call $put32 (i32.const 0x2414) (local.get $h5))
    (call $put32 (i32.const 0x2418) (local.get $h6)) (call $put32 (i32.const 0x241c) (local.get $h7))
    (i32.const 32)))
