# man/: manual pages.
dist_man_MANS += man/wafer-info.1
dist_man_MANS += man/wafer.conf.5
