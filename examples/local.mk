# examples/: small programs a user can copy (built, not installed). Run
# them from the build tree with ./uninstalled examples/hello.
noinst_PROGRAMS += examples/hello
examples_hello_SOURCES = examples/hello.c
examples_hello_LDADD = libwafer.la -lm
