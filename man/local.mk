# man/: manual pages.
dist_man_MANS += man/wafer-info.1
dist_man_MANS += man/wafer.conf.5
dist_man_MANS += man/wafer-replay.1
dist_man_MANS += man/wafer-memory.7
