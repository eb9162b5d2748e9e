# t/standins/: the stand-in drivers. Those built only with a plugin's
# toolkit (fakecuda, fakenccl, the Level Zero driver) are registered in
# that plugin's t/<plugin>/local.mk, inside its configure conditional.

# The engine on its own: joins, every dtype, mismatched calls.
check_PROGRAMS += t/standins/inproc_engine
TESTS += t/standins/inproc_engine
t_standins_inproc_engine_SOURCES = t/standins/inproc_engine.c plugins/cpu/inproc_comm.c plugins/cpu/inproc_comm.h \
	t/half.h
t_standins_inproc_engine_LDADD = -lpthread -lm
# Its own objects: the plugin compiles inproc_comm.c with libtool.
t_standins_inproc_engine_CFLAGS = $(AM_CFLAGS)
