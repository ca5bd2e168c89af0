# tests/client.cmake - libwaveclient and wavectl without a daemon: loaders,
# JSON output, argument parsing, and the library's reply handling against a
# scripted nng REP socket.
wave_test(test_client
  SOURCES test_client.c jsonq.c
  LIBS wvctl waveclient wvbase nng::nng)
