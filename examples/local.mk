# examples/: small programs a user can copy (built, not installed). Run
# them from the build tree with ./uninstalled examples/hello.
noinst_PROGRAMS += examples/hello
examples_hello_SOURCES = examples/hello.c
examples_hello_LDADD = libwafer.la -lm

# Trains an MLP on two spirals with ops.h, with and without donation:
# ./uninstalled examples/mlp
noinst_PROGRAMS += examples/mlp
examples_mlp_SOURCES = examples/mlp.c
examples_mlp_LDADD = libwafer.la -lm
