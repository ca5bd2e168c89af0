# embed_spv.cmake - turn one SPIR-V binary into C source: a 16-byte aligned
# `const uint32_t NAME[]` and its word count.  Run as
#   cmake -DIN=x.spv -DOUT=x.c -DNAME=sym -P embed_spv.cmake
# SPIR-V is a stream of little-endian 32-bit words, so each group of four
# bytes becomes one word; the build never needs a shader compiler at run time.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(n EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${IN}: not a whole number of 32-bit words")
endif()
# Bytes b0 b1 b2 b3 of a word are the hex pairs 1..4: the literal is b3b2b1b0.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
# Eight words to a line keeps the generated file readable (CMake's regex
# has no {n}, hence the spelled-out pattern).
set(w8 "[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,")
string(REGEX REPLACE "(${w8})" "\\1\n  " words "${words}")
math(EXPR count "${n} / 8")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by embed_spv.cmake; do not edit. */\n"
  "#include <stddef.h>\n#include <stdint.h>\n"
  "_Alignas(16) const uint32_t ${NAME}[${count}] = {\n  ${words}\n};\n"
  "const size_t ${NAME}_words = ${count};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
