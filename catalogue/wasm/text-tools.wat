;; text-tools: two small text tools for Voicebox extensions, on the buffer-abi/1 calling convention.
;;
;; The relay writes the input bytes at 0x400 and calls an export with their length; the export
;; writes its answer at 0x2400 and returns how many bytes it wrote (at most 32).
;;
;;   crc32       the CRC-32 (IEEE 802.3, the checksum of zip and gzip) of the input, as 8
;;               lower-case hex digits: "123456789" gives "cbf43926".
;;   word_count  "LINES WORDS CHARACTERS" in decimal, like wc -lwm: lines are newline bytes,
;;               words are runs of bytes other than space, tab, newline, vertical tab, form feed
;;               and carriage return, characters are UTF-8 code points (bytes that do not
;;               continue a sequence).
;;
;; Build: wat2wasm text-tools.wat -o text-tools.wasm (Debian package wabt).
(module
  (memory (export "memory") 1 1)

  ;; digit returns the ASCII lower-case hex digit of d (0..15).
  (func $digit (param $d i32) (result i32)
    (select
      (i32.add (local.get $d) (i32.const 48))
      (i32.add (local.get $d) (i32.const 87))
      (i32.lt_u (local.get $d) (i32.const 10))))

  (func (export "crc32") (param $len i32) (result i32)
    (local $crc i32) (local $i i32) (local $k i32)
    (local.set $crc (i32.const -1))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $crc (i32.xor (local.get $crc) (i32.load8_u offset=0x400 (local.get $i))))
        (local.set $k (i32.const 8))
        (loop $bits
          ;; crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1))
          (local.set $crc
            (i32.xor
              (i32.shr_u (local.get $crc) (i32.const 1))
              (i32.and (i32.const 0xedb88320)
                (i32.sub (i32.const 0) (i32.and (local.get $crc) (i32.const 1))))))
          (local.set $k (i32.sub (local.get $k) (i32.const 1)))
          (br_if $bits (local.get $k)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $bytes)))
    (local.set $crc (i32.xor (local.get $crc) (i32.const -1)))
    ;; eight hex digits, the most significant first
    (local.set $k (i32.const 0))
    (loop $hex
      (i32.store8 offset=0x2400 (local.get $k)
        (call $digit
          (i32.and
            (i32.shr_u (local.get $crc) (i32.sub (i32.const 28) (i32.shl (local.get $k) (i32.const 2))))
            (i32.const 15))))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br_if $hex (i32.lt_u (local.get $k) (i32.const 8))))
    (i32.const 8))

  ;; put writes n in decimal at 0x2400 + p and returns the position after it.
  (func $put (param $n i32) (param $p i32) (result i32)
    (local $digits i32) (local $t i32) (local $i i32)
    (local.set $digits (i32.const 1))
    (local.set $t (local.get $n))
    (block $counted
      (loop $count
        (br_if $counted (i32.lt_u (local.get $t) (i32.const 10)))
        (local.set $t (i32.div_u (local.get $t) (i32.const 10)))
        (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
        (br $count)))
    (local.set $i (local.get $digits))
    (loop $write
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (i32.store8 offset=0x2400 (i32.add (local.get $p) (local.get $i))
        (i32.add (i32.rem_u (local.get $n) (i32.const 10)) (i32.const 48)))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $write (local.get $i)))
    (i32.add (local.get $p) (local.get $digits)))

  ;; space reports whether byte c separates words.
  (func $space (param $c i32) (result i32)
    (i32.or
      (i32.eq (local.get $c) (i32.const 32))
      (i32.and
        (i32.ge_u (local.get $c) (i32.const 9))
        (i32.le_u (local.get $c) (i32.const 13)))))

  (func (export "word_count") (param $len i32) (result i32)
    (local $i i32) (local $c i32) (local $lines i32) (local $words i32) (local $chars i32)
    (local $inword i32) (local $p i32)
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $c (i32.load8_u offset=0x400 (local.get $i)))
        (if (i32.eq (local.get $c) (i32.const 10))
          (then (local.set $lines (i32.add (local.get $lines) (i32.const 1)))))
        (if (i32.ne (i32.and (local.get $c) (i32.const 0xc0)) (i32.const 0x80))
          (then (local.set $chars (i32.add (local.get $chars) (i32.const 1)))))
        (if (call $space (local.get $c))
          (then (local.set $inword (i32.const 0)))
          (else
            (if (i32.eqz (local.get $inword))
              (then
                (local.set $words (i32.add (local.get $words) (i32.const 1)))
                (local.set $inword (i32.const 1))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $bytes)))
    (local.set $p (call $put (local.get $lines) (i32.const 0)))
    (i32.store8 offset=0x2400 (local.get $p) (i32.const 32))
    (local.set $p (call $put (local.get $words) (i32.add (local.get $p) (i32.const 1))))
    (i32.store8 offset=0x2400 (local.get $p) (i32.const 32))
    (call $put (local.get $chars) (i32.add (local.get $p) (i32.const 1)))))
