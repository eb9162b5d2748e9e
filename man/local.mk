# man/: manual pages.
dist_man_MANS += man/wafer-info.1
dist_man_MANS += man/wafer.conf.5
dist_man_MANS += man/wafer-bench.1
dist_man_MANS += man/wafer-channels.7
