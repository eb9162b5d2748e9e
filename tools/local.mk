# tools/: command-line programs installed with the library.
# wafer-info: what wafer sees — configuration, plugins, devices (wafer-info(1)).
bin_PROGRAMS += tools/wafer-info
tools_wafer_info_SOURCES = tools/wafer-info.c
tools_wafer_info_LDADD = libwafer.la
