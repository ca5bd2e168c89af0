# embed_cl.cmake - turn one OpenCL C source into C source: a string
# `const char NAME[]` holding the file's text, so that kernels travel inside
# the binary and are built by the driver at device open (no loose files at
# run time).  Run as
#   cmake -DIN=x.cl -DOUT=x.c -DNAME=sym -P embed_cl.cmake
# The text is written as hex escapes, one line of the file per line, so any
# character (quotes, backslashes, trigraph-like runs) survives unchanged.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" esc "${hex}")
# Break the literal after every newline byte (\x0a) to keep lines short.
string(REPLACE "\\x0a" "\\x0a\"\n  \"" esc "${esc}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by embed_cl.cmake; do not edit. */\n"
  "const char ${NAME}[] =\n  \"${esc}\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
