# tools/: command-line programs installed with the library.

bin_PROGRAMS += tools/wafer-replay
tools_wafer_replay_SOURCES = tools/wafer-replay.c \
	tools/replay_svg.c tools/replay_svg.h
tools_wafer_replay_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
tools_wafer_replay_LDADD = libwafer-core.la $(ZLIB_LIBS) -lm
