# tests/base.cmake - the error table and the dtype/op vocabulary (wvcore wvproto).
wave_test(test_base SOURCES test_base.c LIBS wvcore wvproto)
